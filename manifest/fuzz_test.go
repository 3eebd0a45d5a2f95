package manifest

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that Parse never panics and that parse → write → parse is
// stable: for a manifest without errors, flipping any phase's state changes
// exactly that state and nothing else, and flipping it back restores the
// original bytes.
func FuzzParse(f *testing.F) {
	names, _ := filepath.Glob(filepath.Join(corpusDir, "*.md"))
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"",
		"- [pending] **a** — x (deps: none)\n",
		"[pending]: http://x\n\n1. [pending] **p** — t (gate: a (b) `)`) (est: 5)\n",
		"# H\r\n\r\n- [merged] **a** – t\r\n  - [failed] **b** - u (deps: a)\r\n",
		"```\n- [pending] **a** — x\n```\n<!-- LOOP-CHECKPOINT: x -->\n",
		"- [ ] x\n- [x] **y** — z\n",
		"1.\t[blocked]\t**t**\t—\tα\n",
		"- [pending] **a**\n  ---\n",
		"**Status:** complete\n**Gate:** `x`\n",
		"\uFEFF# H\n- [pending] **a** — x\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		m, err := Parse(src)
		if m == nil {
			t.Fatal("nil Manifest")
		}
		if err != nil {
			return
		}
		// Cap the work per input; the property is per phase anyway.
		for i := range min(len(m.Phases), 16) {
			for _, to := range otherStates(m.Phases[i].State) {
				if err := flipAndBack(m, i, to, true); err != nil {
					t.Fatalf("%v\ninput: %q", err, src)
				}
			}
		}
		if err := statusRoundTrip(m); err != nil {
			t.Fatalf("%v\ninput: %q", err, src)
		}
	})
}
