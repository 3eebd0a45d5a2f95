package work_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/gittest"
	"github.com/claudopilot/claudopilot/sandbox"
	"github.com/claudopilot/claudopilot/work"
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
	// 3 of the driver's (the resolver's cat-file, the branch's
	// update-ref, the leftover check's status; the watch reads the
	// worktree list from git's files, worktree.WorktreesNoHead: a `git
	// worktree list` until session 13; no status where its inotify watch
	// saw nothing change, issue 25 §1; before, a status of the base
	// checkout before and after), 1 for the worktree (the reset that
	// checks it out: its admin folder is written as `git worktree add
	// --no-checkout` writes it, worktree.registerFromFiles, where that
	// command and the symbolic-ref it runs were 2 until session 13); 7
	// with the watch's list and git's add, 8 until the done check found the base's tip
	// among the tip's parents rather than by rev-list --count
	// (TestDoneCheckOnTopOfBase); 11 until the look for a repository at a
	// gitlink before git status (issue 21) read the index file, not
	// `ls-files --stage`; 16 before issue 25 (the branch looked up by show-ref, not the
	// resolver; a status for the attempt's start note of a worktree just
	// made; add -A, diff --cached and diff --check where status lists
	// nothing left), 10 before the watch's inotify, 27 before issue 17.
	const budget = 4
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

// The done check's "at least one commit beyond the base" asks no git
// process when the base's tip is among the tip's ancestors of the first
// few generations, through a merge of the base too (the tip then cannot
// be reachable from the base); any other branch is counted, and a branch
// the base holds is still not done.
func TestDoneCheckOnTopOfBase(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	base := f.rev("main")
	more := func(n int) []gittest.Commit {
		var cs []gittest.Commit
		for i := range n {
			cs = append(cs, gittest.Commit{Ref: "scratch", Message: "more", Files: map[string]string{"more.txt": strconv.Itoa(i)}})
		}
		return cs
	}
	// c[0]: the DONE_ rename on the base; c[1..5] on top of it.
	c := gittest.Import(t, f.runner.Env, f.top, append([]gittest.Commit{{Ref: "scratch", From: "main^0", Message: "done", Renames: [][2]string{{docRel, doneRel}}}}, more(5)...)...)
	// The base moved on (m[0]) and was merged into the branch (m[1],
	// as git merge makes it), one commit on top (m[2]).
	m := gittest.Import(t, f.runner.Env, f.top,
		gittest.Commit{Ref: "scratch-base", From: "main^0", Message: "the base moves", Files: map[string]string{"other.txt": "other\n"}},
		gittest.Commit{Ref: "scratch-merged", From: c[0], Merge: []string{":1"}, Message: "merge the base", Files: map[string]string{"other.txt": "other\n"}},
		gittest.Commit{Ref: "scratch-merged", Message: "after the merge", Files: map[string]string{"after.txt": "after\n"}})
	for _, tc := range []struct {
		name          string
		branch, main  string
		done, revList bool
	}{
		{"one commit on the base", c[0], base, true, false},
		{"the base merged in, a commit on top", m[2], m[0], true, false},
		{"four commits on the base", c[3], base, true, false},
		{"six commits on the base: counted", c[5], base, true, true},
		{"the base moved on to the tip: counted", c[5], c[5], false, true},
		{"the base moved on past the tip: counted", c[2], c[4], false, true},
	} {
		f.gitIn(f.top, "update-ref", "refs/heads/auto/p1", tc.branch)
		f.gitIn(f.top, "update-ref", "refs/heads/main", tc.main)
		trace := filepath.Join(t.TempDir(), "trace")
		f.runner.Git = f.git.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
		tip, ok, why := work.DoneCheck(f.runner, job())
		f.runner.Git.Close()
		if tip != tc.branch || ok != tc.done {
			t.Errorf("%s: DoneCheck = %s, %v (%s); want %s, %v", tc.name, tip, ok, why, tc.branch, tc.done)
		}
		b, err := os.ReadFile(trace)
		if err != nil {
			t.Fatal(err)
		}
		if counted := strings.Contains(string(b), "built-in: git rev-list"); counted != tc.revList {
			t.Errorf("%s: rev-list ran: %v, want %v", tc.name, counted, tc.revList)
		}
	}
}

// A retry over the phase's kept worktree, resumed after a killed driver,
// reads from the worktree's admin folder what git was asked before: that
// it is listed, unlocked and populated (a `git worktree list`), and
// whether a merge is under way, on resume and before the base is merged
// in (a `rev-parse MERGE_HEAD` each). A locked or unpopulated worktree is
// still set aside (TestRunRecreatesUnpopulatedWorktree), an unfinished
// merge still found (TestRunResumeOverUnfinishedMerge).
func TestRunRetryReadsTheAdminFolder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.parkBranch(map[string]string{"kept.txt": "kept\n"}, true)
	trace := filepath.Join(t.TempDir(), "trace")
	f.runner.Git = f.git.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	f.runner.Agent = f.agent(doneBody)
	j := job()
	j.Retry, j.Resume = true, true
	if o := f.run(j); !o.OK {
		t.Fatalf("outcome %+v", o)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"built-in: git worktree list", "built-in: git rev-parse -q --verify MERGE_HEAD"} {
		if strings.Contains(string(b), c) {
			t.Errorf("%s ran:\n%s", strings.TrimPrefix(c, "built-in: "), b)
		}
	}
}
