package scheduler

import (
	"context"
	"testing"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/state"

	"github.com/claudopilot/claudopilot/ledger"
)

func cost(c float64, session string) ledger.Usage {
	return ledger.Usage{CostUSD: &c, SessionID: session}
}

// History adds usage records up per phase and role, keeps them across a
// retry, and remembers the newest session per role.
func TestHistoryUsage(t *testing.T) {
	a, b, c := cost(0.1, "s1"), cost(0.2, "s2"), cost(0.05, "")
	recs := []state.Record{
		{Phase: "p", Event: "launch", Role: state.Worker, Attempt: 1},
		{Phase: "p", Event: "usage", Role: state.Worker, Attempt: 1, Usage: &a},
		{Phase: "p", Event: "fail", Role: state.Worker, Attempt: 1},
		{Phase: "p", Event: "usage", Role: state.Supervisor, Attempt: 1, Usage: &c},
		{Phase: "p", Event: "retry"},
		{Phase: "p", Event: "usage", Role: state.Worker, Attempt: 1, Usage: &b},
	}
	h, _ := state.History(recs)
	if got := ledger.CostText(h["p"].Usage); got != "$0.35" {
		t.Errorf("total %s", got)
	}
	if got := ledger.CostText(h["p"].ByRole[state.Worker]); got != "$0.30" {
		t.Errorf("worker %s", got)
	}
	if h["p"].Session[state.Worker] != "s2" {
		t.Errorf("session %q", h["p"].Session[state.Worker])
	}
}

// A rate-limited worker is relaunched with the session its output named.
func TestCooldownRelaunchCarriesSession(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a"), Config{MaxParallel: 1, MaxSupervisorAttempts: 1})
	h.runner.on("a", state.Worker, step{Cooldown: 1, Usage: cost(0.01, "sess-a")})
	if _, _, err := h.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	js := h.runner.jobsOf("a", state.Worker)
	if len(js) != 2 || js[0].Session != "" || js[1].Session != "sess-a" {
		t.Fatalf("jobs %+v", js)
	}
}

// The run budget stops launches, also a repair that was due: the run ends
// instead of waiting for it.
func TestRunBudgetEndsWithRepairDue(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a", "[pending] **b** — b (deps: a)"), Config{MaxParallel: 1, MaxSupervisorAttempts: 2, RunMaxCost: 1})
	h.runner.on("a", state.Worker, step{Reason: state.ReasonExit, Usage: cost(1.5, "")})
	_, _, err := h.run(context.Background())
	wantErrIs(t, err, ErrBudget)
	if n := len(h.runner.jobsOf("a", state.Supervisor)); n != 0 {
		t.Errorf("%d supervisor runs after the budget was reached", n)
	}
}

// Drain: what runs finishes and merges, nothing new starts, and the run
// ends with success.
func TestDrain(t *testing.T) {
	t.Parallel()
	controls := make(chan Control)
	h := newHarness(t, manifestOf("[pending] **a** — a", "[pending] **b** — b"), Config{MaxParallel: 1, MaxSupervisorAttempts: 1, Controls: controls})
	hold := make(chan struct{})
	h.runner.on("a", state.Worker, step{OK: true, Wait: true, Hold: hold})
	h.runner.entered = make(chan Job, 2)
	ch := h.start(context.Background())
	<-h.runner.entered
	controls <- Control{Drain: true}
	h.ev.wait(t, "drain", isEv(EvDrain, ""))
	close(hold)
	_, evs, err := h.await(ch)
	if err != nil {
		t.Fatalf("drain ended with %v", err)
	}
	if h.runner.callsOf("b") != 0 {
		t.Error("b launched while draining")
	}
	if indexOf(evs, isEv(EvMerged, "a")) < 0 {
		t.Error("a did not merge")
	}
}

// A phase that goes red while the run drains is owed its repair, and no
// driver holds it once the run has ended: it is left [pending], not
// [running] (status said both "No run is going on" and "Running now: a"),
// and the next run starts it with that repair, the supervisor, at once:
// no worker first, no launch that runs nothing.
func TestDrainLeavesARedPhasePendingWithItsRepairOwed(t *testing.T) {
	t.Parallel()
	controls := make(chan Control)
	cfg := Config{MaxParallel: 1, MaxSupervisorAttempts: 2, Controls: controls}
	h1 := newHarness(t, manifestOf("[pending] **a** — a", "[pending] **b** — b (deps: a)"), cfg)
	h1.jn = openJournal(t)
	hold := make(chan struct{})
	h1.runner.on("a", state.Worker, step{Reason: state.ReasonGate, Detail: "red", Wait: true, Hold: hold})
	h1.runner.entered = make(chan Job, 2)
	ch := h1.start(context.Background())
	<-h1.runner.entered
	controls <- Control{Drain: true}
	h1.ev.wait(t, "drain", isEv(EvDrain, ""))
	close(hold)
	if _, _, err := h1.await(ch); err != nil {
		t.Fatalf("drain ended with %v", err)
	}
	if n := len(h1.runner.jobsOf("a", state.Supervisor)); n != 0 {
		t.Fatalf("%d supervisors launched while draining", n)
	}
	h1.store.wantStates(t, map[string]manifest.State{"a": manifest.Pending, "b": manifest.Pending})

	h2 := newHarness(t, h1.store.text(), cfg)
	h2.jn = reopen(t, h1.jn)
	if _, _, err := h2.run(context.Background()); err != nil {
		t.Fatalf("next run: %v", err)
	}
	jobs := h2.runner.jobsOf("a", "")
	if len(jobs) != 1 || jobs[0].Role != state.Supervisor || jobs[0].Attempt != 1 || jobs[0].Failure != state.ReasonGate || jobs[0].Detail != "red" {
		t.Fatalf("a's jobs in the next run %+v, want its supervisor #1 (gate, red) alone", jobs)
	}
	h2.store.wantStates(t, allMerged("a", "b"))
}

// A repair cut short by the driver's own stop (an interrupt, or a SIGKILL
// that left no outcome) spends no supervisor attempt: repeated restarts
// must not exhaust a phase.
func TestStoppedRepairSpendsNoAttempt(t *testing.T) {
	recs := []state.Record{
		{Phase: "p", Event: "launch", Role: state.Worker, Attempt: 1},
		{Phase: "p", Event: "fail", Role: state.Worker, Attempt: 1, Reason: state.ReasonConflict},
		{Phase: "p", Event: "launch", Role: state.Supervisor, Attempt: 1},
		{Phase: "p", Event: "interrupted", Role: state.Supervisor, Attempt: 1},
		{Phase: "p", Event: "launch", Role: state.Supervisor, Attempt: 2},
		{Phase: "q", Event: "launch", Role: state.Supervisor, Attempt: 1}, // the driver died here
	}
	h, _ := state.History(recs)
	if h["p"].SuperSpent != 0 || h["p"].SuperRuns != 2 {
		t.Errorf("p: spent %d of %d runs, want 0 of 2", h["p"].SuperSpent, h["p"].SuperRuns)
	}
	if h["q"].SuperSpent != 0 || h["q"].SuperRuns != 1 {
		t.Errorf("q: spent %d of %d runs, want 0 of 1", h["q"].SuperSpent, h["q"].SuperRuns)
	}
}

// RUN_MAX_COST_USD holds against an agent that reports a negative cost:
// the figure is never subtracted (#22 §5), so the next attempt's spend
// reaches the budget.
func TestRunBudgetIgnoresNegativeCost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a", "[pending] **b** — b (deps: a)", "[pending] **c** — c (deps: b)"), Config{MaxParallel: 1, MaxSupervisorAttempts: 2, RunMaxCost: 1})
	h.runner.on("a", state.Worker, step{OK: true, Usage: cost(-1000, "")})
	h.runner.on("b", state.Worker, step{OK: true, Usage: cost(1.5, "")})
	sum, _, err := h.run(context.Background())
	wantErrIs(t, err, ErrBudget)
	if n := len(h.runner.jobsOf("c", state.Worker)); n != 0 {
		t.Errorf("c launched after the budget was spent")
	}
	if c, _ := sum.Usage.Cost(); c != 1.5 {
		t.Errorf("run cost %v, want 1.5", c)
	}
}
