package land_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/claudopilot/claudopilot/internal/gittest"
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
	// (Its commit is imported on a side branch: one process, where a
	// worktree add -b, an rm, a commit and a rev-parse were six.)
	before := f.rev("main")
	side := gittest.Import(t, f.env, f.top, gittest.Commit{Ref: "side", From: "main^0", Message: "drop b", Delete: []string{"b.txt"}})[0]
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

// The poll's read of the base can race the driver's own move of it: read
// before the merge's compare-and-swap, judged after it. Judged against the
// value the driver has just written, that stale read looked like a move
// backwards ("moved outside the driver: <merge> -> <old>"), and the next
// poll saw the driver's merge as a second foreign move ("<old> -> <merge>").
// A hook that holds the poll between its read and its judgement until the
// merge has landed makes the race happen every time. (It was a git first
// on PATH that held a rev-parse: the read is the shared resolver's now,
// issue 25 §1.)
func TestCheckBaseIgnoresAReadThatRacedTheDriversMove(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	if m, err := f.owner.CheckBase(f.ctx); m != nil || err != nil {
		t.Fatalf("first CheckBase = %v, %v", m, err)
	}
	old := f.rev("main")
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"a.txt": "a by p1\n"})

	read, release := make(chan string, 1), make(chan struct{})
	var armed atomic.Bool
	armed.Store(true)
	land.HoldBaseRead(f.owner, func(v string) {
		if armed.CompareAndSwap(true, false) {
			read <- v
			<-release
		}
	})
	type result struct {
		m   *land.BaseMove
		err error
	}
	polled := make(chan result, 1)
	go func() {
		m, err := f.owner.CheckBase(f.ctx)
		polled <- result{m, err}
	}()
	// The poll has read the base: now the driver lands a merge.
	if v := <-read; v != old {
		t.Fatalf("the poll read %.12s, want the old base %.12s", v, old)
	}
	out := f.mustMerge(job("p1", "first", tip))
	close(release)
	if r := <-polled; r.m != nil || r.err != nil {
		t.Errorf("the poll that raced the driver's merge reported %v (%v)", r.m, r.err)
	}
	if m, err := f.owner.CheckBase(f.ctx); m != nil || err != nil {
		t.Errorf("the next poll reported the driver's own merge %.12s: %v (%v)", out.Commit, m, err)
	}
	if mv := f.owner.TakeBaseMoves(); len(mv) != 0 {
		t.Errorf("the merge noted %v", mv)
	}
	if m, err := land.LastBaseMove(f.layout); m != nil || err != nil {
		t.Errorf("base-moved.json says %v (%v)", m, err)
	}
}

// A move forward along the driver's own merges is no foreign move, even
// when the driver did not see its write succeed; a move past them still is.
func TestCheckBaseTakesAForwardMoveToItsOwnMerge(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	if m, err := f.owner.CheckBase(f.ctx); m != nil || err != nil {
		t.Fatalf("first CheckBase = %v, %v", m, err)
	}
	old := f.rev("main")
	tree := f.rev("main^{tree}")
	own := f.gitIn(f.top, "commit-tree", "-p", old, "-m", "Merge p1: first", tree)
	land.OwnMove(f.owner, func() { f.gitIn(f.top, "update-ref", "refs/heads/main", own, old) }, own, false)
	if m, err := f.owner.CheckBase(f.ctx); m != nil || err != nil {
		t.Errorf("the driver's own merge, its write not seen, reported as %v (%v)", m, err)
	}
	foreign := f.gitIn(f.top, "commit-tree", "-p", own, "-m", "an agent's", tree)
	f.gitIn(f.top, "update-ref", "refs/heads/main", foreign, own)
	if m, err := f.owner.CheckBase(f.ctx); err != nil || m == nil || m.From != own || m.To != foreign {
		t.Errorf("a move past the driver's merge = %+v, %v; want %.12s -> %.12s", m, err, own, foreign)
	}
}
