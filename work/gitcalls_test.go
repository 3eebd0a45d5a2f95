package work_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/sandbox"
)

// One worker attempt that finishes and passes its gate runs at most
// budget git processes of the driver's own (the agent's aside): the
// worktree's admin folder and HEAD are read from their files, and the
// done check reads both docs in one process, the watch for writes outside
// the worktree lists the worktrees once, and the leftover commit asks no
// git whether a merge is under way when there is no MERGE_HEAD, nor
// whether anything is staged when it has just listed what is (issue #17:
// git calls per landed phase). Each check still runs; only its process
// goes.
func TestRunGitCalls(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	trace := filepath.Join(t.TempDir(), "trace")
	f.runner.Git = f.git.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	f.runner.Agent = f.agent(doneBody)
	f.runner.Stray = &sandbox.Watch{} // as run sets it without the sandbox
	o := f.run(job())
	if !o.OK {
		t.Fatalf("outcome %+v", o)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, l := range strings.Split(string(b), "\n") {
		if _, c, ok := strings.Cut(l, "trace: built-in: git "); ok {
			calls = append(calls, c)
		}
	}
	// 5 of the driver's (1 of them the watch's: a worktree list; no
	// status where its inotify watch saw nothing change, issue 25 §1;
	// before, a status of the base checkout before and after; 1 the leftover
	// check's status), 3 that `git worktree add` runs itself (branch,
	// symbolic-ref, reset); 11 until the look for a repository at a
	// gitlink before git status (issue 21) read the index file, not
	// `ls-files --stage`; 16 before issue 25 (the branch looked up by show-ref, not the
	// resolver; a status for the attempt's start note of a worktree just
	// made; add -A, diff --cached and diff --check where status lists
	// nothing left), 10 before the watch's inotify, 27 before issue 17.
	const budget = 8
	if len(calls) > budget {
		t.Errorf("%d git processes for one attempt, want at most %d:\n%s", len(calls), budget, strings.Join(calls, "\n"))
	}
}

// A sandboxed attempt's new tip comes in with the absorb, which notes it
// was not in the store before: the done check then knows the branch is
// beyond the base without a rev-list (issue 25 §1). The count still runs
// for a tip the store held (TestTakeFresh; the unsandboxed attempt above).
func TestRunSandboxedDoneCheckCountsNothing(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap (bwrap) is not installed")
	}
	t.Parallel()
	f := newFixture(t)
	f.sandboxed()
	trace := filepath.Join(t.TempDir(), "trace")
	f.runner.Git = f.git.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	f.runner.Agent = hostileAgent(t, "ok.sh")
	o := f.run(job())
	if !o.OK {
		t.Fatalf("outcome %+v", o)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "built-in: git rev-list") {
		t.Errorf("the done check counted commits with git:\n%s", b)
	}
}
