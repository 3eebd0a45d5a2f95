package scheduler

import (
	"context"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/ledger"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/state"
)

func tokens(n int64) ledger.Usage { return ledger.Usage{Tokens: &n} }

// PHASE_MAX_SESSIONS counts every agent process the phase started, of
// every role: a worker and a supervisor reach 2 and the phase is parked
// with reason budget naming the cap, though repairs remain and KEEP_GOING
// is off; its dependent waits on it.
func TestSessionCapParks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a", "[pending] **b** — b (deps: a)"), Config{MaxParallel: 1, MaxSupervisorAttempts: 5, PhaseMaxSessions: 2})
	h.runner.on("a", state.Worker, fail(state.ReasonGate), fail(state.ReasonGate))
	h.runner.on("a", state.Supervisor, fail(state.ReasonExit))
	sum, evs, err := h.run(context.Background())
	wantErrIs(t, err, ErrParked)
	if n := h.runner.callsOf("a"); n != 2 {
		t.Errorf("a ran %d times, want 2 (the cap)", n)
	}
	p := phaseSummary(t, sum, "a")
	if p.Reason != state.ReasonBudget {
		t.Errorf("a's reason %q, want budget", p.Reason)
	}
	i := indexOf(evs, isEv(EvBudget, "a"))
	if i < 0 || !strings.Contains(evs[i].Detail, "PHASE_MAX_SESSIONS") || !strings.Contains(evs[i].Detail, "2 agent sessions of 2") {
		t.Fatalf("no budget event naming PHASE_MAX_SESSIONS: %s", fmtEvents(evs))
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Blocked, "b": manifest.Blocked})
}

// PHASE_MAX_TOKENS adds the tokens of every role and of the reviewers;
// a passing attempt still merges.
func TestTokenCapCountsRolesAndPassingStillMerges(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a", "[pending] **b** — b"), Config{MaxParallel: 1, MaxSupervisorAttempts: 5, PhaseMaxTokens: 1000})
	h.runner.on("a", state.Worker, step{Reason: state.ReasonGate, Usage: tokens(600)})
	h.runner.on("a", state.Supervisor, step{Reason: state.ReasonExit, Usage: tokens(500)})
	h.runner.on("b", state.Worker, step{OK: true, Usage: tokens(5000)})
	_, evs, err := h.run(context.Background())
	wantErrIs(t, err, ErrParked)
	i := indexOf(evs, isEv(EvBudget, "a"))
	if i < 0 || !strings.Contains(evs[i].Detail, "used 1100 tokens of 1000 (PHASE_MAX_TOKENS)") {
		t.Fatalf("no budget event naming PHASE_MAX_TOKENS: %s", fmtEvents(evs))
	}
	if n := h.runner.callsOf("a"); n != 2 {
		t.Errorf("a ran %d times, want 2", n)
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Blocked, "b": manifest.Merged})
}

// The caps hold across restarts. A session cut short by an interrupt
// counts, and so does one whose driver was killed (a process group
// journaled, no outcome): the restarted driver starts no agent over the
// cap. Its resumed phase is still given to the runner, which may find the
// branch done (that costs no session) but starts nothing else.
func TestCapsAcrossRestart(t *testing.T) {
	t.Parallel()
	text := manifestOf("[pending] **a** — a")
	cfg := Config{MaxParallel: 1, MaxSupervisorAttempts: 5, PhaseMaxSessions: 3}
	h1 := newHarness(t, text, cfg)
	h1.jn = openJournal(t)
	h1.runner.on("a", state.Worker, fail(state.ReasonGate), step{Wait: true})
	h1.runner.on("a", state.Supervisor, fail(state.ReasonExit))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h1.start(ctx)
	h1.ev.wait(t, "second worker", isLaunch("a", state.Worker, 2))
	cancel()
	_, _, err := h1.await(ch)
	wantErrIs(t, err, ErrInterrupted)
	// Three sessions: worker 1, supervisor 1, worker 2 (interrupted).
	h2 := newHarness(t, h1.store.text(), cfg)
	h2.jn = reopen(t, h1.jn)
	_, evs, err := h2.run(context.Background())
	wantErrIs(t, err, ErrParked)
	jobs := h2.runner.jobsOf("a", "")
	if len(jobs) != 1 || !jobs[0].Resume || !strings.Contains(jobs[0].Capped, "PHASE_MAX_SESSIONS") {
		t.Fatalf("jobs after the restart %+v, want one resumed job told of the cap", jobs)
	}
	if i := indexOf(evs, isEv(EvBudget, "a")); i < 0 || !strings.Contains(evs[i].Detail, "3 agent sessions of 3") {
		t.Fatalf("no budget event: %s", fmtEvents(evs))
	}
	h2.store.wantStates(t, map[string]manifest.State{"a": manifest.Blocked})

	// A third driver: the phase is flipped back by hand; its lifetime
	// count stays, so it is parked again before any launch.
	h3 := newHarness(t, strings.Replace(h2.store.text(), "[blocked]", "[pending]", 1), cfg)
	h3.jn = reopen(t, h2.jn)
	_, _, err = h3.run(context.Background())
	wantErrIs(t, err, ErrParked)
	if n := h3.runner.callsOf("a"); n != 0 {
		t.Errorf("a launched %d times over its cap after a retry", n)
	}
}

// A driver killed while an agent ran books no outcome: its journaled
// process group still counts as a session.
func TestKilledDriverSessionCounts(t *testing.T) {
	one := ledger.Usage{Sessions: 1}
	recs := []state.Record{
		{Phase: "p", Event: "launch", Role: state.Worker, Attempt: 1},
		{Phase: "p", Event: "pgid", Role: state.Worker, Attempt: 1, PGID: 10},
		{Phase: "p", Event: "usage", Role: state.Worker, Attempt: 1, Usage: &one},
		{Phase: "p", Event: "fail", Role: state.Worker, Attempt: 1, Reason: state.ReasonGate},
		{Phase: "p", Event: "launch", Role: state.Supervisor, Attempt: 1},
		{Phase: "p", Event: "pgid", Role: state.Supervisor, Attempt: 1, PGID: 11}, // killed here
		{Phase: "p", Event: "launch", Role: state.Supervisor, Attempt: 1},
		{Phase: "p", Event: "pgid", Role: state.Supervisor, Attempt: 1, PGID: 12}, // and here
		{Phase: "p", Event: "retry"},
	}
	h, _ := state.History(recs)
	if n := h["p"].Usage.Sessions; n != 3 {
		t.Errorf("%d sessions, want 3", n)
	}
	if n := h["p"].ByRole[state.Supervisor].Sessions; n != 2 {
		t.Errorf("%d supervisor sessions, want 2", n)
	}
}
