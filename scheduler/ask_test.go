package scheduler

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/state"
)

func asks(q string) step {
	return step{Reason: state.ReasonNeedsInput, Detail: "asked: " + q, Question: q}
}

// An agent that asks ends its attempt as needs-input: no attempt is
// counted, no supervisor runs, its dependent does not start, and the run
// waits. An answer for another question is ignored; the answer to this one
// sends the same attempt on, told the question and the answer, in the
// agent's session.
func TestNeedsInputAskAnswerResume(t *testing.T) {
	t.Parallel()
	controls := make(chan Control)
	h := newHarness(t, manifestOf("[pending] **a** — a", "[pending] **b** — b (deps: a)"), Config{MaxParallel: 2, MaxSupervisorAttempts: 2, Controls: controls})
	h.jn = openJournal(t)
	st := asks("Postgres or SQLite?")
	st.Usage.SessionID = "sess-1"
	h.runner.on("a", state.Worker, st, okStep)
	ch := h.start(context.Background())
	ev := h.ev.wait(t, "the question", isEv(EvAsk, "a"))
	if ev.Detail != "Postgres or SQLite?" || ev.Until.Sub(ev.Time) != DefaultNeedsInputWait {
		t.Fatalf("ask event %+v, want the question and a 24h deadline", ev)
	}
	recs := readRecords(t, h.jn)
	i := slices.IndexFunc(recs, func(r state.Record) bool { return r.Event == EvAsk })
	if i < 0 || recs[i].Detail != ev.Detail {
		t.Fatalf("journal %+v: no ask record", recs)
	}
	asked := recs[i].Time
	controls <- Control{Answers: map[string]Answer{"a": {Asked: asked.Add(-time.Hour), Text: "stale"}}}
	controls <- Control{Answers: map[string]Answer{"a": {Asked: asked, Text: "SQLite"}}}
	sum, evs, err := h.await(ch)
	if err != nil {
		t.Fatalf("%v\n%s", err, fmtEvents(evs))
	}
	if n := len(h.runner.jobsOf("a", state.Supervisor)); n != 0 {
		t.Errorf("%d supervisors ran for a question", n)
	}
	js := h.runner.jobsOf("a", state.Worker)
	if len(js) != 2 || js[1].Attempt != 1 || js[1].Question != "Postgres or SQLite?" || js[1].Answer != "SQLite" || js[1].Session != "sess-1" {
		t.Fatalf("a's jobs %+v, want attempt 1 again with the question, the answer and its session", js)
	}
	if evs[indexOf(evs, isEv(EvAnswer, "a"))].Detail != "SQLite" {
		t.Errorf("answer event: %s", fmtEvents(evs))
	}
	if indexOf(evs, isLaunch("b", state.Worker, 1)) < indexOf(evs, isEv(EvAnswer, "a")) {
		t.Errorf("b started before a's question was answered: %s", fmtEvents(evs))
	}
	if p := phaseSummary(t, sum, "a"); p.Attempts != 1 {
		t.Errorf("a's attempts %d, want 1: a question spends none", p.Attempts)
	}
	h.store.wantStates(t, allMerged("a", "b"))
}

// A question survives a driver restart: the new driver launches nothing
// for it, counts it as waiting on you, does not tell it again, and the
// answer given to it resumes the attempt.
func TestNeedsInputAcrossRestart(t *testing.T) {
	t.Parallel()
	text := manifestOf("[pending] **a** — a", "[pending] **b** — b (deps: a)")
	h1 := newHarness(t, text, Config{MaxParallel: 1, MaxSupervisorAttempts: 1})
	h1.jn = openJournal(t)
	h1.runner.on("a", state.Worker, asks("which port?"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h1.start(ctx)
	h1.ev.wait(t, "the question", isEv(EvAsk, "a"))
	cancel()
	sum, _, err := h1.await(ch)
	wantErrIs(t, err, ErrInterrupted)
	if sum.Waiting != 1 {
		t.Errorf("summary waiting on you %d, want 1", sum.Waiting)
	}
	recs := readRecords(t, h1.jn)
	hist, _ := state.History(recs)
	if hist["a"].Question != "which port?" || hist["a"].Last != EvAsk || hist["a"].WorkerRuns != 0 {
		t.Fatalf("history %+v, want the open question and no attempt", hist["a"])
	}

	controls := make(chan Control)
	h2 := newHarness(t, h1.store.text(), Config{MaxParallel: 1, MaxSupervisorAttempts: 1, Controls: controls})
	h2.jn = reopen(t, h1.jn)
	ch = h2.start(context.Background())
	h2.ev.wait(t, "the start", isEv(EvStart, ""))
	controls <- Control{Answers: map[string]Answer{"a": {Asked: hist["a"].Asked, Text: "8080"}}}
	_, evs, err := h2.await(ch)
	if err != nil {
		t.Fatalf("%v\n%s", err, fmtEvents(evs))
	}
	if indexOf(evs, isEv(EvAsk, "a")) >= 0 {
		t.Errorf("the question was told again after the restart: %s", fmtEvents(evs))
	}
	js := h2.runner.jobsOf("a", state.Worker)
	if len(js) != 1 || js[0].Attempt != 1 || js[0].Answer != "8080" || js[0].Question != "which port?" {
		t.Fatalf("a's jobs after the restart %+v, want attempt 1 with the answer", js)
	}
	if indexOf(evs, isLaunch("a", state.Worker, 1)) < indexOf(evs, isEv(EvAnswer, "a")) {
		t.Errorf("a launched before its answer: %s", fmtEvents(evs))
	}
	h2.store.wantStates(t, allMerged("a", "b"))
}

// Unanswered for NEEDS_INPUT_HOURS, the phase parks with reason
// needs-input (halt mode too: nothing failed), and what depends on it with
// it; no supervisor runs.
func TestNeedsInputUnansweredParks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a", "[pending] **b** — b (deps: a)", "[pending] **c** — c"), Config{MaxParallel: 2, MaxSupervisorAttempts: 2, NeedsInputWait: 30 * time.Millisecond})
	h.runner.on("a", state.Worker, asks("which port?"))
	sum, evs, err := h.run(context.Background())
	wantErrIs(t, err, ErrParked)
	if p := phaseSummary(t, sum, "a"); p.Reason != state.ReasonNeedsInput || p.Attempts != 0 {
		t.Errorf("a: %+v, want parked with reason needs-input and no attempt", p)
	}
	if n := len(h.runner.jobsOf("a", "")); n != 1 {
		t.Errorf("a ran %d times, want 1", n)
	}
	if indexOf(evs, isEv(EvBlocked, "a")) < 0 {
		t.Errorf("no blocked event: %s", fmtEvents(evs))
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Blocked, "b": manifest.Blocked, "c": manifest.Merged})
}

// The park's detail says NEEDS_INPUT_HOURS as a person writes it, not
// time.Duration's 24h0m0s.
func TestWaitText(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		24 * time.Hour: "24h", 90 * time.Minute: "1h30m", 2 * time.Minute: "2m",
		1800 * time.Millisecond: "1.8s", 30 * time.Millisecond: "30ms", 3*time.Hour + 5*time.Second: "3h0m5s",
	} {
		if got := waitText(d); got != want {
			t.Errorf("waitText(%v) = %q, want %q", d, got, want)
		}
	}
}

// An answer given while no driver ran, after the question's deadline
// (answer_by): `claudopilot answer` took it, and said the next run starts
// that way. The next driver takes it (Config.Answers, read at its start)
// before it checks the deadline, so the phase goes on instead of being
// parked with the answer lost. Before, the first pass parked it: the
// answer came through Controls, after.
func TestLateAnswerBeforeTheNextStart(t *testing.T) {
	t.Parallel()
	text := manifestOf("[pending] **a** — a", "[pending] **b** — b (deps: a)")
	h1 := newHarness(t, text, Config{MaxParallel: 1, MaxSupervisorAttempts: 1, NeedsInputWait: time.Hour})
	h1.jn = openJournal(t)
	h1.runner.on("a", state.Worker, asks("which port?"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h1.start(ctx)
	h1.ev.wait(t, "the question", isEv(EvAsk, "a"))
	cancel()
	_, _, err := h1.await(ch)
	wantErrIs(t, err, ErrInterrupted)
	hist, _ := state.History(readRecords(t, h1.jn))

	answers := map[string]Answer{"a": {Asked: hist["a"].Asked, Text: "8080"}}
	h2 := newHarness(t, h1.store.text(), Config{MaxParallel: 1, MaxSupervisorAttempts: 1, NeedsInputWait: time.Hour, Answers: answers})
	h2.jn = reopen(t, h1.jn)
	s := h2.build()
	later := hist["a"].AskUntil.Add(time.Minute)
	s.now = func() time.Time { return later }
	_, evs, err := h2.await(h2.start(context.Background()))
	if err != nil {
		t.Fatalf("%v\n%s", err, fmtEvents(evs))
	}
	js := h2.runner.jobsOf("a", state.Worker)
	if len(js) != 1 || js[0].Answer != "8080" || js[0].Question != "which port?" {
		t.Fatalf("a's jobs after the restart %+v, want one with the answer", js)
	}
	if indexOf(evs, isEv(EvBlocked, "a")) >= 0 {
		t.Errorf("a was parked with its answer waiting: %s", fmtEvents(evs))
	}
	h2.store.wantStates(t, allMerged("a", "b"))
}
