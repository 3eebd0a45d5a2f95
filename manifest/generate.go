package manifest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
)

// Generate returns a valid, acyclic manifest of n phases named phase-00001…
// for tests, benchmarks and load experiments. Each phase depends on about
// avgDeps earlier phases (never later ones, so the graph is acyclic); states
// are mostly pending. The same arguments always give the same bytes.
func Generate(n int, avgDeps int, seed int64) []byte {
	n = max(n, 0)
	avgDeps = max(avgDeps, 0)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x636c617564))

	var b bytes.Buffer
	b.Grow(64 + n*(80+avgDeps*14))
	b.WriteString("# Execution Manifest\n\n")
	b.WriteString("**Status:** in-progress\n")
	b.WriteString("**Gate:** `go test ./...`\n\n")
	b.WriteString("## Phases\n\n")

	id := func(i int) string { return fmt.Sprintf("phase-%05d", i+1) }
	deps := make([]int, 0, 2*avgDeps+1)
	for i := range n {
		deps = deps[:0]
		// Uniform in [0, 2*avgDeps] averages avgDeps, capped by how many
		// earlier phases exist. Recent phases are favoured, as in real plans
		// where work builds on what came just before.
		want := min(rng.IntN(2*avgDeps+1), i)
		for len(deps) < want {
			window := min(i, 4*avgDeps+8)
			var d int
			if rng.IntN(4) == 0 {
				d = rng.IntN(i)
			} else {
				d = i - 1 - rng.IntN(window)
			}
			if !slices.Contains(deps, d) {
				deps = append(deps, d)
			}
		}
		slices.Sort(deps)

		b.WriteString(strconv.Itoa(i + 1))
		b.WriteString(". [")
		b.WriteString(string(randomState(rng)))
		b.WriteString("] **")
		b.WriteString(id(i))
		b.WriteString("** — generated phase ")
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteString(" (deps: ")
		if len(deps) == 0 {
			b.WriteString("none")
		}
		for k, d := range deps {
			if k > 0 {
				b.WriteString(", ")
			}
			b.WriteString(id(d))
		}
		b.WriteByte(')')
		if rng.IntN(3) == 0 {
			fmt.Fprintf(&b, " (est: %dm)", 15*(1+rng.IntN(12)))
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func randomState(rng *rand.Rand) State {
	switch r := rng.IntN(100); {
	case r < 80:
		return Pending
	case r < 90:
		return Merged
	case r < 95:
		return Running
	case r < 98:
		return Failed
	default:
		return Blocked
	}
}
