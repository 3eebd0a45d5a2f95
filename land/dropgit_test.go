package land_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// Landed worktrees are removed by the driver and their registrations
// dropped by one git worktree prune when the cleanups are waited for, not
// by a git worktree remove per landed phase (issue 25 §1); after Wait git
// lists none of them. Two landings show it (three were 15 processes
// more).
func TestLandedWorktreesPrunedOnce(t *testing.T) {
	t.Parallel()
	src := strings.Replace(manifestSrc, " (owns: api/)", "", 1) + "3. [pending] **p3** — third phase (deps: none)\n"
	f := newFixture(t, src) // the gate worktree made (no worktree add)
	ids := []string{"p2", "p3"}
	docs := []string{"p2-second.md", ""}
	tips := make([]string, len(ids))
	for i, id := range ids {
		_, tips[i] = f.branch(id, docs[i], map[string]string{id + ".txt": id + "\n"})
	}
	trace := filepath.Join(t.TempDir(), "trace")
	f.owner.Git = f.git.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	for i, id := range ids {
		if out := f.owner.Merge(f.ctx, job(id, id, tips[i])); !out.OK {
			t.Fatalf("Merge(%s) = %+v", id, out)
		}
	}
	f.owner.Wait()
	var wt []string
	for _, c := range gitCalls(t, trace) {
		if strings.Contains(c, "worktree") {
			wt = append(wt, c)
		}
	}
	if len(wt) != 1 || !strings.Contains(wt[0], "worktree prune") {
		t.Errorf("worktree processes for 2 landings, want one prune:\n%s", strings.Join(wt, "\n"))
	}
	list := f.gitIn(f.top, "worktree", "list", "--porcelain")
	for _, id := range ids {
		if w := f.layout.Worktree(id); exists(w) || strings.Contains(list, w) {
			t.Errorf("%s's worktree %s is left (or still registered):\n%s", id, w, list)
		}
	}
}
