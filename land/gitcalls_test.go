package land_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gitCalls lists the git commands GIT_TRACE wrote to trace.
func gitCalls(t *testing.T, trace string) []string {
	t.Helper()
	b, err := os.ReadFile(trace)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var calls []string
	for _, l := range strings.Split(string(b), "\n") {
		if _, c, ok := strings.Cut(l, "trace: built-in: git "); ok {
			calls = append(calls, c)
		}
	}
	return calls
}

// A landing after the first (the gate worktree made) runs at most budget
// git processes, its background cleanup included (issue #17: git calls
// per landed phase): the base read at the merge's start is the one the
// merge builds on, the checks read one diff from the merge base, the base checkout's move reads the
// manifest's new blob from the one diff-tree its check of local changes
// read, and the cleanup does not ask
// whether the base holds the tip it merged.
func TestMergeGitCalls(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"feature/f.txt": "feature\n"})
	f.mustMerge(job("p1", "first phase", tip))
	_, tip = f.branch("p2", "p2-second.md", map[string]string{"feature/g.txt": "g\n"})
	trace := filepath.Join(t.TempDir(), "trace")
	f.owner.Git = f.git.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	// A run keeps its cat-file resolver from start to end (engine.Run:
	// KeepResolvers); without it, a landing that goes more than batchIdle
	// between two reads on a loaded machine starts a second one and counts
	// one git process more (seen at load ~25 in the old binary too).
	f.owner.Git.KeepResolvers(true)
	t.Cleanup(func() { f.owner.Git.KeepResolvers(false) })
	f.mustMerge(job("p2", "second phase", tip))
	f.owner.Wait() // the prune of its worktree's registration counts too
	calls := gitCalls(t, trace)
	// 32 before: a second read of the base, a merge-base --is-ancestor
	// before the build, an ls-tree of the manifest when the base checkout
	// follows, a second diff-tree of the base and the merge for that move,
	// a merge-base --is-ancestor before the branch's deletion. 27 until
	// the protected-file check (issue #21) read the branch's changed
	// paths for every phase (a diff-tree the scope check ran only for a
	// phase with owns:).
	// 11 since the checks read what the merge changes in the secret
	// scan's log, not in a git diff of the branch's own (the merge is
	// built first; TestChecksReadTheScansDiff);
	// 12 since the base checkout's move reads the difference of the
	// two commits' trees through the long-lived cat-file, not diff-tree;
	// 13 since the merge commit is written in the manifest flip's pack
	// (the identity read once per run by git var -l), not by commit-tree;
	// 14 since the branch goes in the base's move (update-ref --stdin
	// with the base's update), not a branch -D in the cleanup;
	// 15 since the manifest flip's blob and trees are one pack for
	// unpack-objects, not a hash-object and a mktree --batch;
	// 16 since that diff is a git diff base...tip, which finds the merge
	// base itself (whether the branch landed before a crash is asked only
	// where the base's committed manifest says it merged);
	// 17 since the changed paths (the protected-file and scope checks)
	// and the conflict-marker candidates are read from one diff-tree -p,
	// not a diff-tree --name-only and a diff --check;
	// 18 since issue 25: the base checkout is found from the HEAD files
	// git's worktree list reads, not a worktree list; 19: the base
	// checkout's move ends with one update-index
	// --index-info (deletions left for last, the manifest's entry), not an rm
	// --cached and an update-index; 20: the base checkout's check of local changes reads
	// the staged ones from its status when HEAD is the old base, not a
	// diff-index; 21: the base read through the shared resolver, not
	// a rev-parse; 22: the gate checkout is known its own worktree from
	// its .git link and admin folder, not a rev-parse; 23: the secret scan's tree diff is read in its log,
	// the branch description is not asked for where the repository's
	// config names none (28 before); 9 since a gate with no command
	// (true, GATE_CMD's default) gets no checkout of the gate worktree
	// (a checkout -f and a clean -ffdx, 11 before).
	const budget = 9
	if len(calls) > budget {
		t.Errorf("%d git processes for one landing, want at most %d:\n%s", len(calls), budget, strings.Join(calls, "\n"))
	}
}

// The end-of-run sweep of landed phases lists the phase branches once,
// instead of looking each landed phase's branch up: with every branch
// gone already (their cleanups ran), it is one git process for any
// number of phases (it was one per phase, plus a read of the base).
func TestCleanupLandedGitCalls(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	trace := filepath.Join(t.TempDir(), "trace")
	f.owner.Git = f.git.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	ids := []string{"p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9", "p10"}
	if err := f.owner.CleanupLanded(f.ctx, ids); err != nil {
		t.Fatal(err)
	}
	if calls := gitCalls(t, trace); len(calls) > 1 {
		t.Errorf("%d git processes for a sweep with nothing left, want 1:\n%s", len(calls), strings.Join(calls, "\n"))
	}
}
