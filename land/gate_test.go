package land_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/land"
	"github.com/claudopilot/claudopilot/state"
)

// A process the agent left behind commits on auto/<id> after the phase's
// gate passed. The merge used to take the branch tip and, its tree being
// the tip's, skip the merge gate: a red commit landed. Whatever tip is
// merged is gated.
func TestMergeGatesATipThatMovedAfterGating(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	base := f.rev("main")
	wt, gated := f.branchOut("p1", "p1-first.md", map[string]string{"feature.txt": "f\n"})
	f.commitOn(wt, "a daemon's late commit", map[string]string{"broken": "x\n"})
	j := job("p1", "first phase", gated)
	j.Gate = "test ! -e broken"

	out := f.owner.Merge(f.ctx, j)
	if out.Reason != state.ReasonGate {
		t.Fatalf("outcome = %+v, want the merge gate red", out)
	}
	f.refused(out, "p1", base)
}

// The merge gate runs on a checkout holding exactly the merge commit's
// tree plus what WORKTREE_PREPARE_CMD makes: an ignored file in the phase's
// worktree, which its own gate saw, is not there.
func TestMergeGateIsHermetic(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	f.commitOn(f.top, "ignore generated files", map[string]string{".gitignore": "generated.cfg\nbuild/\n"})
	base := f.rev("main")
	wt, tip := f.branch("p1", "p1-first.md", map[string]string{"uses-config.txt": "needs generated.cfg\n"})
	f.write(wt, "generated.cfg", "made by hand in the worktree\n")
	j := job("p1", "first phase", tip)
	j.Gate = "test -f generated.cfg"

	out := f.owner.Merge(f.ctx, j)
	if out.Reason != state.ReasonGate {
		t.Fatalf("outcome = %+v, want the merge gate red without generated.cfg", out)
	}
	f.refused(out, "p1", base)

	// What prepare makes is there; so is nothing a gate run left before.
	f.owner.Prepare = "echo prepared > generated.cfg"
	j.Gate = "test -f generated.cfg && test ! -e build/stale && test ! -e junk.txt && mkdir -p build && touch build/stale junk.txt"
	f.mustMerge(j)
	_, tip2 := f.branch("p2", "p2-second.md", map[string]string{"api/x.go": "package api\n"})
	j2 := job("p2", "second phase", tip2)
	j2.Gate = j.Gate
	f.mustMerge(j2)
	if got := f.read(land.GateDir(f.layout), "generated.cfg"); got != "prepared\n" {
		t.Errorf("generated.cfg in the gate worktree = %q", got)
	}
	if !exists(filepath.Join(f.layout.LogDir("p2"), "merge-prepare-1.log")) {
		t.Error("no prepare log for the merge gate")
	}
}

// A gate worktree whose .git link a gate removed is made again, never
// resolved to the repository around it.
func TestMergeGateWorktreeRebuilt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"one.txt": "1\n"})
	j := job("p1", "first phase", tip)
	j.Gate = "rm -f .git"
	f.mustMerge(j)
	head := f.gitIn(f.top, "symbolic-ref", "HEAD")
	f.write(f.top, "user.txt", "the user's untracked file\n")
	_, tip2 := f.branch("p2", "p2-second.md", map[string]string{"api/x.go": "package api\n"})
	j2 := job("p2", "second phase", tip2)
	j2.Gate = "test -f api/x.go && test -f one.txt"
	f.mustMerge(j2)
	if got := f.gitIn(f.top, "symbolic-ref", "HEAD"); got != head {
		t.Errorf("the main checkout's HEAD is %s, was %s", got, head)
	}
	if got := f.read(f.top, "user.txt"); !strings.Contains(got, "user's") {
		t.Errorf("user.txt = %q", got)
	}
	if _, err := os.Stat(filepath.Join(land.GateDir(f.layout), ".git")); err != nil {
		t.Errorf("the gate worktree was not made again: %v", err)
	}
}
