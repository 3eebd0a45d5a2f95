package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/gittest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/worktree"
)

// CheckCommitted lists the roadmap folder on the base once instead of
// asking git about each phase's doc: 2000 phases took 295 s to reach the
// first launch. GIT_TRACE counts the git processes; a doc missing on the
// base is still reported at its phase's line.
func TestCheckCommittedOneListing(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx := context.Background()
	dir := t.TempDir()
	env := append(gittest.NoAutoMaintenance(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	rmDir := filepath.Join(dir, "roadmap")
	if err := os.Mkdir(rmDir, 0o755); err != nil {
		t.Fatal(err)
	}
	const phases = 300
	var m strings.Builder
	for i := 1; i <= phases; i++ {
		fmt.Fprintf(&m, "%d. [pending] **p%d** — phase %d (deps: none)\n", i, i, i)
		if i != 7 {
			if err := os.WriteFile(filepath.Join(rmDir, fmt.Sprintf("p%d.md", i)), []byte("# doc\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(rmDir, roadmap.ManifestName), []byte(m.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-qm", "roadmap")
	// p7's doc exists only in the checkout.
	if err := os.WriteFile(filepath.Join(rmDir, "p7.md"), []byte("# doc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(t.TempDir(), "trace")
	c, err := worktree.Open(ctx, dir, append(env, "GIT_TRACE="+trace))
	if err != nil {
		t.Fatal(err)
	}
	rm, err := roadmap.Load(rmDir, roadmap.Options{RequireDocs: true})
	if err != nil {
		t.Fatal(err)
	}
	l, err := MakeLayout(c, rmDir, "main")
	if err != nil {
		t.Fatal(err)
	}
	before := gitCalls(t, trace)
	err = CheckCommitted(ctx, c, rm, l)
	var bad *roadmap.InvalidError
	if !errors.As(err, &bad) || len(bad.Problems) != 1 || bad.Problems[0].Line != 7 ||
		!strings.Contains(bad.Problems[0].Msg, "phase p7: its doc roadmap/p7.md is not committed on main") {
		t.Fatalf("CheckCommitted = %v, want p7's doc not committed, at line 7", err)
	}
	if n := gitCalls(t, trace) - before; n > 3 {
		t.Errorf("CheckCommitted ran %d git commands for %d phases, want at most 3", n, phases)
	}
}

func gitCalls(t *testing.T, trace string) int {
	t.Helper()
	b, err := os.ReadFile(trace)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "trace: built-in: git ")
}
