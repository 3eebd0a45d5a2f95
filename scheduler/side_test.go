package scheduler

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/state"
)

// ask puts a side request into the loop and returns it once the loop holds
// it; a second ask (or settle) returns only after the loop went round once
// more, so whatever it could grant by then, it has.
func ask(t *testing.T, d *Side, who string) *sideAsk {
	t.Helper()
	a := &sideAsk{who: who, reply: make(chan SideSlot, 1)}
	if err := d.send(context.Background(), sideMsg{ask: a}); err != nil {
		t.Fatal(err)
	}
	return a
}

// settle waits until the loop has gone round: it takes a request and
// withdraws it.
func settle(t *testing.T, d *Side) {
	t.Helper()
	a := ask(t, d, "settle")
	if err := d.send(context.Background(), sideMsg{ask: a, back: true}); err != nil {
		t.Fatal(err)
	}
}

func granted(a *sideAsk) (SideSlot, bool) {
	select {
	case g := <-a.reply:
		return g, true
	default:
		return SideSlot{}, false
	}
}

func waitGrant(t *testing.T, a *sideAsk) SideSlot {
	t.Helper()
	select {
	case g := <-a.reply:
		return g
	case <-time.After(hangTimeout):
		t.Fatalf("%s got no slot", a.who)
		return SideSlot{}
	}
}

// With MAX_PARALLEL=1 a scanner waits while a worker runs, and while a
// phase is ready for the slot (the graph's work goes first); it takes the
// slot once no phase wants it. Without the pool a scanner ran at once,
// beside the worker.
func TestSideRunWaitsForTheSlot(t *testing.T) {
	t.Parallel()
	side := NewSide()
	h := newHarness(t, manifestOf("[pending] **a** — a", "[pending] **b** — b (deps: a)"), Config{MaxParallel: 1, AgentCmd: "agent", Side: side})
	holdA, holdB := make(chan struct{}), make(chan struct{})
	h.runner.on("a", state.Worker, step{OK: true, Wait: true, Hold: holdA})
	h.runner.on("b", state.Worker, step{OK: true, Wait: true, Hold: holdB})
	ch := h.start(context.Background())
	h.ev.wait(t, "a launched", isLaunch("a", state.Worker, 1))
	sc := ask(t, side, "scanner bugs")
	settle(t, side)
	if _, ok := granted(sc); ok {
		t.Fatal("the scanner took a slot while a worker held the only one")
	}
	close(holdA)
	h.ev.wait(t, "b launched", isLaunch("b", state.Worker, 1))
	settle(t, side)
	if _, ok := granted(sc); ok {
		t.Fatal("the scanner took the slot b was ready for")
	}
	close(holdB)
	g := waitGrant(t, sc)
	if g.Lane != "" || g.Cmd != h.cfg.AgentCmd {
		t.Errorf("slot %+v, want the one lane's", g)
	}
	if _, _, err := h.await(ch); err != nil {
		t.Fatal(err)
	}
	evs := h.ev.all()
	start := indexOf(evs, func(e Event) bool { return e.Kind == EvSideStart && e.Title == "scanner bugs" })
	if start < 0 || start < indexOf(evs, isEv(EvExit, "b")) {
		t.Errorf("events %s: want the scanner's start after b's agent ended", fmtEvents(evs))
	}
	g.Release(0, "", "") // the loop has ended: returns at once
	if _, err := side.Acquire(context.Background(), "scanner docs"); !errors.Is(err, ErrRunEnded) {
		t.Errorf("Acquire after the run: %v, want ErrRunEnded", err)
	}
}

// A lane cooling down after a usage limit delays a scanner; one that
// waits gives up with its context; another lane, not cooling, takes it.
func TestSideRunWaitsOutACooldown(t *testing.T) {
	t.Parallel()
	lanes := []Lane{
		{ID: "x", Cmd: "agent-x", SupervisorCmd: "agent-x", Slots: 1},
		{ID: "y", Cmd: "agent-y", SupervisorCmd: "agent-y", Slots: 0, Account: "/acct-y"},
	}
	side := NewSide()
	ctrl := make(chan Control, 1)
	h := newHarness(t, manifestOf("[pending] **a** — a (lane: x)"), Config{Lanes: lanes, Side: side, Controls: ctrl, MaxSupervisorAttempts: 1})
	h.runner.on("a", state.Worker, step{Cooldown: time.Hour, Detail: "usage limit"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h.start(ctx)
	h.ev.wait(t, "the breaker", isEv(EvCooldown, "a"))
	sc := ask(t, side, "scanner bugs")
	settle(t, side)
	if _, ok := granted(sc); ok {
		t.Fatal("the scanner took a slot on a lane cooling down")
	}
	// Acquire gives up with its context, and its request is withdrawn.
	actx, acancel := context.WithCancel(context.Background())
	acancel()
	if _, err := side.Acquire(actx, "scanner todo"); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire with its context ended: %v", err)
	}
	// Lane y, on another account, gets a slot: the scanner takes it
	// there (a waits for x, its own lane).
	ctrl <- Control{Slots: map[string]int{"y": 1}}
	g := waitGrant(t, sc)
	if g.Lane != "y" || g.Cmd != "agent-y" || g.Account != "/acct-y" {
		t.Errorf("slot %+v, want lane y's command and account", g)
	}
	if n := h.runner.callsOf("a"); n != 1 {
		t.Errorf("a ran %d times during its lane's hold", n)
	}
	g.Release(0, "", "")
	cancel()
	if _, _, err := h.await(ch); !errors.Is(err, ErrInterrupted) {
		t.Fatal(err)
	}
}

// A scanner that hits a usage limit trips its lane's breaker as a worker
// would: the event names the lanes held, a phase that becomes ready on
// that lane does not start, and the journal keeps the hold for a restart.
func TestSideRunTripsTheBreaker(t *testing.T) {
	t.Parallel()
	side := NewSide()
	h := newHarness(t, manifestOf("[pending] **a** — a", "[pending] **b** — b (deps: a)"), Config{MaxParallel: 2, AgentCmd: "agent", Side: side})
	h.jn = openJournal(t)
	holdA := make(chan struct{})
	h.runner.on("a", state.Worker, step{OK: true, Wait: true, Hold: holdA})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h.start(ctx)
	h.ev.wait(t, "a launched", isLaunch("a", state.Worker, 1))
	g := waitGrant(t, ask(t, side, "scanner bugs")) // the second slot
	g.Release(time.Hour, "usage limit, resets 15:00", "/logs/scanner-1.log")
	ev := h.ev.wait(t, "the breaker", func(e Event) bool { return e.Kind == EvCooldown })
	if ev.Phase != "" || !slices.Equal(ev.Lanes, []string{""}) || ev.LogPath != "/logs/scanner-1.log" {
		t.Errorf("cooldown event %+v", ev)
	}
	close(holdA)
	h.ev.wait(t, "a merged", isEv(EvMerged, "a"))
	settle(t, side)
	if n := h.runner.callsOf("b"); n != 0 {
		t.Errorf("b launched %d times on a lane the scanner's usage limit holds", n)
	}
	cancel()
	if _, _, err := h.await(ch); !errors.Is(err, ErrInterrupted) {
		t.Fatal(err)
	}
	_, cool := state.History(readRecords(t, h.jn))
	if until := cool.For(h.cfg.AgentCmd, state.Worker); until.Before(time.Now().Add(50 * time.Minute)) {
		t.Errorf("the journal's cooldown for the lane ends %v, want about an hour from now", until)
	}
}
