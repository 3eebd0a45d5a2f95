package work_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/gittest"
)

// depTip makes a dep's branch with one commit beside main, as a done dep
// waiting to land leaves it, and returns its tip. The commit is imported
// (one Import, no process; the dep's worktree, which no test reads, with
// add, commit and rev-parse were six processes).
func (f *fixture) depTip() string {
	f.t.Helper()
	return gittest.Import(f.t, f.runner.Env, f.top, gittest.Commit{Ref: "auto/dep", From: "main^0", Message: "the dep's work", Files: map[string]string{"dep.txt": "dep\n"}})[0]
}

// A stacked first attempt (Job.StackOn) starts its new branch on the
// dep's tip: the agent sees the dep's work, and the tip holds both.
func TestRunStackOnStartsFromTheDepsTip(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tip := f.depTip()
	seen := filepath.Join(f.tmp, "seen")
	f.runner.Agent = f.agent(`
test -f dep.txt && echo yes > '` + seen + `'
` + doneBody)
	j := job()
	j.StackOn = tip
	o := f.run(j)
	if !o.OK {
		t.Fatalf("outcome = %+v", o)
	}
	if !exists(seen) {
		t.Errorf("the agent did not see the dep's work")
	}
	if ok, _ := f.git.IsAncestor(f.ctx, tip, o.Tip); !ok {
		t.Errorf("the dep's tip is not in the branch")
	}
}

// A kept branch started stacked gets the dep's tip merged in.
func TestRunStackOnMergesIntoAKeptBranch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	kept := f.parkBranch(map[string]string{"kept.txt": "kept\n"}, false)
	tip := f.depTip()
	f.runner.Agent = f.agent(`test -f dep.txt && test -f kept.txt || exit 7
` + doneBody)
	j := job()
	j.StackOn = tip
	o := f.run(j)
	if !o.OK {
		t.Fatalf("outcome = %+v", o)
	}
	for _, c := range []string{kept, tip} {
		if ok, _ := f.git.IsAncestor(f.ctx, c, o.Tip); !ok {
			t.Errorf("%s is not in the tip", c)
		}
	}
}

// Job.Fresh (stopped while stacked on a dep that failed): the old branch,
// with the dep's commits and the stopped attempt's uncommitted work
// committed on it, is kept as stacked/p1-<time>, and the phase starts
// over from the base.
func TestRunFreshSetsTheStackedBranchAside(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tip := f.depTip()
	wt := f.wt()
	f.gitIn(f.top, "worktree", "add", "-q", "-b", "auto/p1", wt, tip)
	f.write(wt, "half.txt", "half done\n")
	f.runner.Agent = f.agent(`test ! -e dep.txt && test ! -e half.txt || exit 7
` + doneBody)
	j := job()
	j.Attempt, j.Fresh = 2, true
	o := f.run(j)
	if !o.OK {
		t.Fatalf("outcome = %+v", o)
	}
	if ok, _ := f.git.IsAncestor(f.ctx, tip, o.Tip); ok {
		t.Errorf("the failed dep's commit is in the new branch")
	}
	aside := strings.Fields(f.gitIn(f.top, "branch", "--list", "--format=%(refname:short)", "stacked/*"))
	if len(aside) != 1 || !strings.HasPrefix(aside[0], "stacked/p1-") {
		t.Fatalf("branches set aside: %v, want one stacked/p1-…", aside)
	}
	if out := f.gitIn(f.top, "show", aside[0]+":half.txt"); !strings.Contains(out, "half done") {
		t.Errorf("the stopped attempt's uncommitted work is not on the kept branch")
	}
	if _, err := os.Stat(filepath.Join(wt, "half.txt")); err == nil {
		t.Errorf("the old worktree's files are still there")
	}
}

// The dep landed from a rewritten branch: the base lacks the tip the phase
// was stacked on (Job.StackedOn), so its branch is set aside and it starts
// over from the base. When the base holds that tip, the branch is kept,
// the base merged in, and a done branch goes straight to the gate.
func TestRunStackedOnChecksTheTip(t *testing.T) {
	t.Parallel()
	for _, rewritten := range []bool{true, false} {
		f := newFixture(t)
		// The dep's commit, and p1's two on it (its work, its doc marked
		// done), in one import; then p1's worktree on its branch (a
		// worktree add -b, add, commit, mv, commit were eleven processes).
		d := "roadmap/p1-first.md"
		tip := gittest.Import(t, f.runner.Env, f.top,
			gittest.Commit{Ref: "auto/dep", From: "main^0", Message: "the dep's work", Files: map[string]string{"dep.txt": "dep\n"}},
			gittest.Commit{Ref: "auto/p1", From: ":1", Message: "p1's work", Files: map[string]string{"p1.txt": "p1\n"}},
			gittest.Commit{Ref: "auto/p1", Message: "p1: done", Renames: [][2]string{{d, "roadmap/DONE_p1-first.md"}}})[0]
		wt := f.wt()
		f.gitIn(f.top, "worktree", "add", "-q", wt, "auto/p1")
		if _, err := os.Stat(filepath.Join(wt, "roadmap/DONE_p1-first.md")); err != nil {
			t.Fatalf("fixture: %v", err)
		}
		// main moves (moveMain; the merge of the dep imported as git
		// merge --no-ff makes it: main's tree with dep.txt added).
		if rewritten {
			f.moveMain("the dep, rewritten", map[string]string{"dep.txt": "dep, rewritten\n"})
		} else {
			gittest.Import(t, f.runner.Env, f.top, gittest.Commit{Ref: "main", From: "main^0", Merge: []string{"auto/dep^0"}, Message: "Merge branch 'auto/dep'", Files: map[string]string{"dep.txt": "dep\n"}})
		}
		ran := filepath.Join(f.tmp, "ran")
		f.runner.Agent = f.agent(`: > '` + ran + `'
` + doneBody)
		j := job()
		j.Attempt, j.Resume, j.TakeBase, j.StackedOn = 2, true, true, tip
		o := f.run(j)
		if !o.OK {
			t.Fatalf("rewritten %v: outcome = %+v", rewritten, o)
		}
		in, _ := f.git.IsAncestor(f.ctx, tip, o.Tip)
		aside := strings.Fields(f.gitIn(f.top, "branch", "--list", "stacked/*"))
		if rewritten && (in || len(aside) != 1 || !exists(ran)) {
			t.Errorf("rewritten: the old tip in the new branch %v, set aside %v, agent ran %v: want a fresh start", in, aside, exists(ran))
		}
		if !rewritten && (!in || len(aside) != 0 || exists(ran) || !o.Found) {
			t.Errorf("kept: tip in %v, set aside %v, agent ran %v, found %v: want the branch kept and gated, no agent", in, aside, exists(ran), o.Found)
		}
	}
}
