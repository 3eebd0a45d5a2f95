package work_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A new phase's branch is made by update-ref before `git worktree add`,
// not by the `git branch` that `worktree add -b` runs under the
// repository's worktree lock: the lock then holds two processes per add,
// not three, and a level's adds queue less (issue 25 §2). The branch
// starts at the base and the attempt passes as before.
func TestRunMakesTheBranchOutsideTheWorktreeLock(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	trace := filepath.Join(t.TempDir(), "trace")
	f.runner.Git = f.git.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	f.runner.Agent = f.agent(doneBody)
	o := f.run(job())
	if !o.OK {
		t.Fatalf("outcome %+v", o)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var made, added bool
	for _, l := range strings.Split(string(b), "\n") {
		_, c, ok := strings.Cut(l, "trace: built-in: git ")
		switch {
		case !ok:
		case strings.HasPrefix(c, "branch "):
			t.Errorf("the branch was made by git branch (worktree add -b), under the worktree lock: %s", c)
		case strings.HasPrefix(c, "worktree add "):
			added = true
			if strings.Contains(" "+c+" ", " -b ") {
				t.Errorf("worktree add makes the branch: %s", c)
			}
		case strings.HasPrefix(c, "update-ref ") && strings.Contains(c, "refs/heads/auto/"):
			made = !added
		}
	}
	// No `git worktree add` at all where the registration is written
	// from files (worktree.registerFromFiles, TestRegisterAsGitDoes).
	if !made {
		t.Errorf("want the branch made by update-ref before any worktree add (made %v, added %v):\n%s", made, added, b)
	}
}
