package scheduler

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/state"
)

func stackHarness(t *testing.T, cfg Config) *harness {
	cfg.Stack = true
	return newHarness(t, manifestOf("[pending] **a** — a (deps: none)", "[pending] **b** — b (deps: a)"), cfg)
}

// STACK=1: b starts on a's gated tip while a's merge gate runs, finishes
// first, and still lands after a.
func TestStackStartsOnTheDepsTip(t *testing.T) {
	t.Parallel()
	h := stackHarness(t, Config{MaxParallel: 2, MaxSupervisorAttempts: 1})
	gate := make(chan struct{})
	h.merger.on("a", mstep{Gate: gate})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch := h.start(ctx)
	h.ev.wait(t, "b stacked", isEv(EvStacked, "b"))
	h.ev.wait(t, "b done", func(e Event) bool { return e.Kind == EvExit && e.Phase == "b" && e.Role == state.Worker })
	close(gate)
	if _, evs, err := h.await(ch); err != nil {
		t.Fatalf("%v\n%s", err, fmtEvents(evs))
	}
	js := h.runner.jobsOf("b", state.Worker)
	if len(js) != 1 || js[0].StackOn != "tip-a-worker-1" {
		t.Errorf("b's jobs %+v, want one stacked on tip-a-worker-1", js)
	}
	if got := h.merger.landed(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("landed %v, want a then b", got)
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Merged, "b": manifest.Merged})
}

// Without STACK, b waits for a's landing.
func TestNoStackWaitsForTheLanding(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)", "[pending] **b** — b (deps: a)"), Config{MaxParallel: 2, MaxSupervisorAttempts: 1})
	_, evs, err := h.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if indexOf(evs, isLaunch("b", state.Worker, 1)) < indexOf(evs, isEv(EvMerged, "a")) {
		t.Errorf("b launched before a landed:\n%s", fmtEvents(evs))
	}
	if js := h.runner.jobsOf("b", state.Worker); len(js) != 1 || js[0].StackOn != "" {
		t.Errorf("b's jobs %+v, want one not stacked", js)
	}
}

// When a lands, b's next attempt (its supervisor after a red gate) takes
// the new base; the attempt in flight is not touched.
func TestStackTakesTheBaseWhenTheDepLands(t *testing.T) {
	t.Parallel()
	h := stackHarness(t, Config{MaxParallel: 2, MaxSupervisorAttempts: 1})
	gate := make(chan struct{})
	hold := make(chan struct{})
	h.merger.on("a", mstep{Gate: gate})
	h.runner.on("b", state.Worker, step{Wait: true, Hold: hold, Reason: state.ReasonGate, Detail: "red"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch := h.start(ctx)
	h.ev.wait(t, "b stacked", isEv(EvStacked, "b"))
	close(gate)
	h.ev.wait(t, "a merged", isEv(EvMerged, "a"))
	close(hold)
	if _, evs, err := h.await(ch); err != nil {
		t.Fatalf("%v\n%s", err, fmtEvents(evs))
	}
	w, s := h.runner.jobsOf("b", state.Worker), h.runner.jobsOf("b", state.Supervisor)
	if len(w) != 1 || w[0].TakeBase || len(s) != 1 || !s[0].TakeBase || s[0].StackedOn != "" {
		t.Errorf("b's worker jobs %+v and supervisor jobs %+v: want the supervisor alone to take the base", w, s)
	}
}

// When a is parked (its merge red, its supervisor spent), b, stacked on
// it and still running, is stopped and waits on a, [blocked]. Retried
// after a restart, b starts over: its next job sets its branch aside.
func TestStackStopsWhenTheDepIsParked(t *testing.T) {
	t.Parallel()
	h := stackHarness(t, Config{MaxParallel: 2, MaxSupervisorAttempts: 1, KeepGoing: true})
	h.jn = openJournal(t)
	gate := make(chan struct{})
	h.merger.on("a", mstep{Gate: gate, Reason: state.ReasonGate, Detail: "red"})
	h.runner.on("a", state.Supervisor, fail(state.ReasonGate))
	h.runner.on("b", state.Worker, step{Wait: true}) // runs until stopped
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch := h.start(ctx)
	h.ev.wait(t, "b stacked", isEv(EvStacked, "b"))
	close(gate)
	_, evs, err := h.await(ch)
	wantErrIs(t, err, ErrParked)
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Blocked, "b": manifest.Blocked})
	mustFind(t, evs, func(e Event) bool { return e.Kind == EvBlocked && e.Phase == "b" })
	if n := h.runner.cancelled; n != 1 {
		t.Errorf("%d attempts stopped, want b's", n)
	}
	if slices.Contains(h.merger.landed(), "b") {
		t.Errorf("b landed without a")
	}

	// A human retries a (and b comes back with it) and runs again.
	text := h.store.text()
	for _, id := range []string{"a", "b"} {
		b, err := manifest.Apply([]byte(text), id, manifest.Pending)
		if err != nil {
			t.Fatal(err)
		}
		text = string(b)
	}
	h2 := stackHarness(t, Config{MaxParallel: 2, MaxSupervisorAttempts: 1, KeepGoing: true})
	h2.store = newMemStore(text)
	h2.merger = newMerger(h2.store)
	h2.jn = reopen(t, h.jn)
	if _, evs, err := h2.run(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, fmtEvents(evs))
	}
	js := h2.runner.jobsOf("b", state.Worker)
	if len(js) != 1 || !js[0].Fresh {
		t.Errorf("b's jobs after the retry %+v, want one that starts over", js)
	}
	recs, _ := state.ReadJournal(h2.jn.Path())
	hist, _ := state.History(recs)
	if hist["b"].Fresh {
		t.Errorf("b still marked to start over after it landed")
	}
}

// a's first merge is red and its supervisor repairs it, so a lands from
// another tip than the one b was stacked on. b, done and waiting to land,
// goes through the runner once more first (Job.StackedOn: the tip it
// started on, checked against the base; the base merged in; no agent when
// the branch is done), then lands after a.
func TestStackChecksTheTipWhenTheDepLandsFromAnother(t *testing.T) {
	t.Parallel()
	h := stackHarness(t, Config{MaxParallel: 2, MaxSupervisorAttempts: 1})
	gate := make(chan struct{})
	h.merger.on("a", mstep{Gate: gate, Reason: state.ReasonGate, Detail: "red"})
	h.runner.on("b", state.Worker, okStep, step{OK: true, Found: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch := h.start(ctx)
	h.ev.wait(t, "b done", func(e Event) bool { return e.Kind == EvExit && e.Phase == "b" && e.Role == state.Worker })
	close(gate)
	if _, evs, err := h.await(ch); err != nil {
		t.Fatalf("%v\n%s", err, fmtEvents(evs))
	}
	js := h.runner.jobsOf("b", state.Worker)
	if len(js) != 2 || js[0].StackOn != "tip-a-worker-1" || js[1].StackedOn != "tip-a-worker-1" || !js[1].Resume || !js[1].TakeBase {
		t.Errorf("b's jobs %+v, want a stacked one, then a check of tip-a-worker-1 with the base merged in", js)
	}
	if got := h.merger.landed(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("landed %v, want a then b", got)
	}
}

// A driver that died before it could stop b leaves b [running] on a
// parked a: the next run parks b behind a at start, marked to start over.
func TestStackRestartParksWhatWasStackedOnAParkedDep(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[blocked] **a** — a (deps: none)", "[running] **b** — b (deps: a)"), Config{MaxParallel: 2, MaxSupervisorAttempts: 1, KeepGoing: true, Stack: true})
	h.jn = openJournal(t)
	_, _, err := h.run(context.Background())
	wantErrIs(t, err, ErrParked)
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Blocked, "b": manifest.Blocked})
	if n := len(h.runner.allJobs()); n != 0 {
		t.Errorf("%d jobs started, want none", n)
	}
	recs := readRecords(t, h.jn)
	if hist, _ := state.History(recs); !hist["b"].Fresh {
		t.Errorf("b is not marked to start over")
	}
}
