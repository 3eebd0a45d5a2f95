package land_test

import (
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/land"
)

// A move of the base that the driver did not make is reported once, and
// says whether the base checkout followed it: an agent's `git update-ref`
// leaves the checkout behind (git status shows staged changes there), a
// human's commit does not. The driver's own merges are never reported.
func TestCheckBaseReportsForeignMoves(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	if m, err := f.owner.CheckBase(f.ctx); m != nil || err != nil {
		t.Fatalf("first CheckBase = %v, %v; want it to record the start", m, err)
	}
	// The driver's own merge.
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"a.txt": "a by p1\n"})
	f.mustMerge(job("p1", "first", tip))
	if m, err := f.owner.CheckBase(f.ctx); m != nil || err != nil {
		t.Fatalf("after the driver's merge CheckBase = %v, %v; want nothing", m, err)
	}
	if mv := f.owner.TakeBaseMoves(); len(mv) != 0 {
		t.Fatalf("merge noted %v", mv)
	}
	// An agent moves the base ref with update-ref to a commit that
	// deletes a file; the checkout stays where it was.
	before := f.rev("main")
	wt := f.layout.Worktree("p2")
	f.gitIn(f.top, "worktree", "add", "-q", "-b", "side", wt, "main")
	f.gitIn(wt, "rm", "-q", "b.txt")
	f.gitIn(wt, "commit", "-q", "-m", "drop b")
	side := f.gitIn(wt, "rev-parse", "HEAD")
	f.gitIn(f.top, "update-ref", "refs/heads/main", side)
	m, err := f.owner.CheckBase(f.ctx)
	if err != nil || m == nil {
		t.Fatalf("CheckBase after update-ref = %v, %v; want a move", m, err)
	}
	if m.From != before || m.To != side || !m.Stale || m.Dir != f.top {
		t.Errorf("move = %+v, want %s -> %s with the checkout %s stale", m, before, side, f.top)
	}
	if s := m.String(); !strings.Contains(s, "moved outside the driver") || !strings.Contains(s, "did not follow") {
		t.Errorf("message %q", s)
	}
	if got, err := land.LastBaseMove(f.layout); err != nil || got == nil || got.To != side {
		t.Errorf("LastBaseMove = %+v, %v (status reads it)", got, err)
	}
	if m, _ := f.owner.CheckBase(f.ctx); m != nil {
		t.Errorf("the same move reported twice: %+v", m)
	}
	// Put the checkout where the ref is; a human's commit there moves the
	// base and the checkout together.
	f.gitIn(f.top, "reset", "-q", "--hard", side)
	human := f.commitOn(f.top, "human", map[string]string{"README.md": "readme by a human\n"})
	m, err = f.owner.CheckBase(f.ctx)
	if err != nil || m == nil || m.To != human || m.Stale {
		t.Errorf("CheckBase after a human commit = %+v, %v; want a move with the checkout following", m, err)
	}
}
