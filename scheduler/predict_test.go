package scheduler

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/state"
)

// fakePredictor predicts a conflict between a and b once both run, and
// remembers which pairs it was asked about.
type fakePredictor struct {
	mu     sync.Mutex
	calls  int
	asked  [][2]string
	called chan struct{}
	once   sync.Once
}

func (f *fakePredictor) Predict(ctx context.Context, running []string, independent func(a, b string) bool) []Conflict {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	var out []Conflict
	for i, a := range running {
		for _, b := range running[i+1:] {
			if !independent(a, b) {
				continue
			}
			f.asked = append(f.asked, [2]string{a, b})
			if a == "a" && b == "b" {
				out = append(out, Conflict{A: a, B: b, Paths: []string{"shared.txt"}})
			}
		}
	}
	if len(out) > 0 {
		f.once.Do(func() { close(f.called) })
	}
	return out
}

// While a and b run, the predictor is asked about independent pairs only
// (c depends on a), and the conflict it finds is told for both phases
// (EvConflict with the other phase and the paths).
func TestPredictedConflictIsTold(t *testing.T) {
	t.Parallel()
	text := manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: none)",
		"[pending] **c** — c (deps: a)",
	)
	h := newHarness(t, text, Config{MaxParallel: 2, Poll: 10 * time.Millisecond})
	fp := &fakePredictor{called: make(chan struct{})}
	told := make(chan struct{})
	h.runner.onRun = func(j Job) {
		if j.ID == "a" || j.ID == "b" {
			<-told // both run until the conflict was told
		}
	}
	h.build().SetPredictor(fp)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch := h.start(ctx)
	for _, id := range []string{"a", "b"} {
		e := h.ev.wait(t, "conflict of "+id, func(e Event) bool { return e.Kind == EvConflict && e.Phase == id && e.Detail != "" })
		other := map[string]string{"a": "b", "b": "a"}[id]
		if e.Detail != "predicted conflict with "+other+" on shared.txt" {
			t.Errorf("%s: %q", id, e.Detail)
		}
	}
	close(told)
	if _, _, err := h.await(ch); err != nil {
		t.Fatal(err)
	}
	for _, p := range fp.asked {
		if slices.Contains(p[:], "c") && slices.Contains(p[:], "a") {
			t.Errorf("asked about %v: c depends on a", p)
		}
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Merged, "b": manifest.Merged, "c": manifest.Merged})
}

// Of a predicted pair waiting to land, the one earlier in the manifest
// goes first; a prediction that is gone is cleared.
func TestPredictedConflictOrdersLanding(t *testing.T) {
	t.Parallel()
	text := manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **x** — x (deps: none)",
		"[pending] **b** — b (deps: none)",
	)
	h := newHarness(t, text, Config{MaxParallel: 3})
	s := h.build()
	s.onPredicted([]Conflict{{A: "b", B: "a", Paths: []string{"f"}}})
	s.mergeQ = []*phase{s.byID["b"], s.byID["x"], s.byID["a"]}
	s.conflictOrder()
	var got []string
	for _, p := range s.mergeQ {
		got = append(got, p.n.ID)
	}
	if !slices.Equal(got, []string{"a", "b", "x"}) {
		t.Errorf("merge queue %v, want a before b", got)
	}
	s.onPredicted(nil)
	if len(s.pred.with) != 0 {
		t.Errorf("prediction not cleared: %v", s.pred.with)
	}
	evs := h.ev.close()
	var told []string
	for _, e := range evs {
		if e.Kind == EvConflict {
			told = append(told, e.Phase+":"+e.Detail)
		}
	}
	want := []string{"a:predicted conflict with b on f", "b:predicted conflict with a on f", "a:", "b:"}
	slices.Sort(told)
	slices.Sort(want)
	if !slices.Equal(told, want) {
		t.Errorf("told %q, want %q", told, want)
	}
}

// When a lands and b was predicted to conflict with it, b's next attempt
// (here its supervisor, after a red gate) takes the new base first
// (Job.TakeBase), though the prediction was cleared while a merged; the
// attempt in flight as a landed was not touched, and
// c, which no conflict was predicted for, fails the same way and does
// not take the base.
func TestPredictedConflictGivesTheBaseBetweenAttempts(t *testing.T) {
	t.Parallel()
	text := manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: none)",
		"[pending] **c** — c (deps: none)",
	)
	h := newHarness(t, text, Config{MaxParallel: 3, MaxSupervisorAttempts: 2, Poll: 10 * time.Millisecond})
	fp := &fakePredictor{called: make(chan struct{})}
	told := make(chan struct{})
	hold := make(chan struct{})
	h.runner.onRun = func(j Job) {
		if j.ID == "a" && j.Role == state.Worker {
			<-told // a lands once the conflict was told
		}
	}
	h.runner.on("b", state.Worker, step{Wait: true, Hold: hold, Reason: state.ReasonGate, Detail: "red"})
	h.runner.on("c", state.Worker, step{Wait: true, Hold: hold, Reason: state.ReasonGate, Detail: "red"})
	h.build().SetPredictor(fp)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// a's merge lands only after a prediction made while it merged (so
	// without it) cleared b's conflict: the landing must still count.
	h.merger.onMerge = func(j MergeJob) {
		if j.ID == "a" {
			h.ev.wait(t, "b's conflict cleared", func(e Event) bool { return e.Kind == EvConflict && e.Phase == "b" && e.Detail == "" })
		}
	}
	ch := h.start(ctx)
	h.ev.wait(t, "conflict of b", func(e Event) bool { return e.Kind == EvConflict && e.Phase == "b" && e.Detail != "" })
	close(told)
	h.ev.wait(t, "a merged", isEv(EvMerged, "a"))
	close(hold) // b's and c's first attempts end after a landed
	if _, _, err := h.await(ch); err != nil {
		t.Fatal(err)
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Merged, "b": manifest.Merged, "c": manifest.Merged})
	for _, tc := range []struct {
		id   string
		role state.Role
		want bool
	}{{"b", state.Worker, false}, {"b", state.Supervisor, true}, {"c", state.Worker, false}, {"c", state.Supervisor, false}} {
		js := h.runner.jobsOf(tc.id, tc.role)
		if len(js) != 1 || js[0].TakeBase != tc.want {
			t.Errorf("%s's %s jobs %+v, want one with TakeBase %v", tc.id, tc.role, js, tc.want)
		}
	}
}
