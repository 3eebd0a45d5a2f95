package scheduler

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/state"
)

// Two lanes on one account (LANE_<id>_CREDENTIALS), running different
// commands, and a third on its own account. A usage limit hit on one
// lane stops launches on both lanes of its account until the reset: the
// agent already running on the other goes on and lands, the phase that
// waits for that lane does not start, the other account's lane goes on.
// The attempt is not counted; one event, journaled, names the lanes. At
// the reset both lanes launch again.
func TestBreakerTwoLanesOneAccount(t *testing.T) {
	t.Parallel()
	lanes := []Lane{
		{ID: "opus", Cmd: "claude -p --model opus", SupervisorCmd: "claude -p --model opus", Slots: 1, Account: "/home/u/.claude"},
		{ID: "sonnet", Cmd: "claude -p --model sonnet", SupervisorCmd: "claude -p --model sonnet", Slots: 1, Account: "/home/u/.claude"},
		{ID: "codex", Cmd: "codex exec", SupervisorCmd: "codex exec", Slots: 1},
	}
	h := newHarness(t, manifestOf(
		"[pending] **a** — a (lane: opus)",
		"[pending] **b** — b (lane: sonnet)",
		"[pending] **c** — c (lane: sonnet) (deps: b)",
		"[pending] **d** — d (lane: codex) (deps: b)",
	), Config{Lanes: lanes, MaxSupervisorAttempts: 1})
	h.jn = openJournal(t)
	h.runner.maxParallel = 3 // one slot on each lane
	holdB := make(chan struct{})
	h.runner.entered = make(chan Job, 8)
	h.runner.on("a", state.Worker, step{Cooldown: time.Hour, Detail: "usage limit, resets 15:00"}, okStep)
	h.runner.on("b", state.Worker, step{OK: true, Wait: true, Hold: holdB})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h.start(ctx)
	ev := h.ev.wait(t, "the breaker", isEv(EvCooldown, "a"))
	if !slices.Equal(ev.Lanes, []string{"opus", "sonnet"}) || !strings.Contains(ev.Detail, "account /home/u/.claude") || !strings.Contains(ev.Detail, "on lanes opus, sonnet") {
		t.Fatalf("cooldown event %+v, want both lanes of the account named", ev)
	}
	// b was running on sonnet when the limit hit: it goes on and lands.
	close(holdB)
	h.ev.wait(t, "b merged", isEv(EvMerged, "b"))
	// d, on the other account, starts; c, on the held account, does not.
	h.ev.wait(t, "d merged", isEv(EvMerged, "d"))
	if n := h.runner.callsOf("c"); n != 0 {
		t.Fatalf("c launched %d times on a lane whose account hit its usage limit", n)
	}
	if n := h.runner.callsOf("a"); n != 1 {
		t.Fatalf("a relaunched during the hold")
	}
	cancel()
	_, _, err := h.await(ch)
	wantErrIs(t, err, ErrInterrupted)
	recs := readRecords(t, h.jn)
	i := slices.IndexFunc(recs, func(r state.Record) bool { return r.Event == "cooldown" })
	if i < 0 || recs[i].Cmd != "account /home/u/.claude" || !strings.Contains(recs[i].Detail, "on lanes opus, sonnet") {
		t.Errorf("journal %+v, want a cooldown record of the account", recs)
	}
}

// When the reset comes, both lanes of the account launch again, and the
// phase that hit the limit runs again under the same attempt number.
func TestBreakerLiftsAtTheReset(t *testing.T) {
	t.Parallel()
	lanes := []Lane{
		{ID: "opus", Cmd: "claude -p --model opus", SupervisorCmd: "claude -p --model opus", Slots: 1, Account: "/acct"},
		{ID: "sonnet", Cmd: "claude -p --model sonnet", SupervisorCmd: "claude -p --model sonnet", Slots: 1, Account: "/acct"},
	}
	h := newHarness(t, manifestOf("[pending] **a** — a (lane: opus)", "[pending] **b** — b (lane: sonnet) (deps: a)"), Config{Lanes: lanes, MaxSupervisorAttempts: 1})
	h.runner.maxParallel = 2
	h.runner.on("a", state.Worker, step{Cooldown: 50 * time.Millisecond, Detail: "usage limit"})
	sum, _, err := h.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	js := h.runner.jobsOf("a", state.Worker)
	if len(js) != 2 || js[1].Attempt != 1 {
		t.Fatalf("a's jobs %+v, want attempt 1 twice", js)
	}
	if p := phaseSummary(t, sum, "a"); p.Attempts != 1 {
		t.Errorf("a's attempts %d, want 1: the limit spends none", p.Attempts)
	}
	h.store.wantStates(t, allMerged("a", "b"))
}
