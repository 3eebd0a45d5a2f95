package scheduler

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/state"
)

// batchMerger is a fakeMerger that also lands trains: in order, the first
// phase scripted red (once) fails with reason gate and the rest come back
// Again, as land.Owner's bisection reports them.
type batchMerger struct {
	*fakeMerger
	bmu     sync.Mutex
	batches [][]string
	red     map[string]bool
}

func (b *batchMerger) MergeBatch(ctx context.Context, js []MergeJob) []MergeOutcome {
	if b.inFlight.Add(1) != 1 {
		b.overlaps.Add(1)
	}
	defer b.inFlight.Add(-1)
	var ids []string
	for _, j := range js {
		ids = append(ids, j.ID)
	}
	b.bmu.Lock()
	b.batches = append(b.batches, ids)
	b.bmu.Unlock()
	outs := make([]MergeOutcome, len(js))
	culprit := false
	for k, j := range js {
		switch {
		case culprit:
			outs[k] = MergeOutcome{ID: j.ID, Again: true}
		case b.red[j.ID]:
			delete(b.red, j.ID)
			culprit = true
			outs[k] = MergeOutcome{ID: j.ID, Reason: state.ReasonGate, Detail: "red in the train", LogPath: "gate.log"}
		default:
			if err := b.store.SetState(j.ID, manifest.Merged); err != nil {
				outs[k] = MergeOutcome{ID: j.ID, Err: err}
				continue
			}
			outs[k] = MergeOutcome{ID: j.ID, OK: true, Commit: "commit-" + j.ID}
		}
	}
	return outs
}

// Phases that finish while a merge is under way are handed to the merge
// owner together (MERGE_BATCH 4); the red one in the train goes to the
// supervisor with reason gate, the ones after it come back for the next
// train, and everything lands. Merges never overlap.
func TestMergeTrainHandsOverWaitingPhases(t *testing.T) {
	t.Parallel()
	text := manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: none)",
		"[pending] **c** — c (deps: none)",
		"[pending] **d** — d (deps: none)",
		"[pending] **e** — e (deps: none)",
	)
	h := newHarness(t, text, Config{MaxParallel: 5, MaxSupervisorAttempts: 2, MergeBatch: 4})
	bm := &batchMerger{fakeMerger: h.merger, red: map[string]bool{"c": true}}
	release := make(chan struct{})
	var once sync.Once
	var first string
	h.merger.onMerge = func(j MergeJob) {
		once.Do(func() {
			first = j.ID
			<-release
		})
	}
	h.ev = newEventLog()
	h.s = New(h.cfg, h.rm, h.store, h.runner, bm, h.jn, h.ev.ch)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch := h.start(ctx)
	// Every worker is done (its exit booked, so it waits in the queue)
	// before the first merge returns.
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		h.ev.wait(t, id+" done", func(e Event) bool { return e.Kind == EvExit && e.Phase == id && e.Role == state.Worker })
	}
	close(release)
	_, _, err := h.await(ch)
	if err != nil {
		t.Fatal(err)
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Merged, "b": manifest.Merged, "c": manifest.Merged, "d": manifest.Merged, "e": manifest.Merged})
	if len(bm.batches) < 1 || len(bm.batches[0]) != 4 || slices.Contains(bm.batches[0], first) {
		t.Fatalf("trains %v (first single merge %s), want a train of the other 4 first", bm.batches, first)
	}
	// The phases after c in the first train came back: each merged once
	// more (in a later train or alone).
	for _, id := range bm.batches[0][slices.Index(bm.batches[0], "c")+1:] {
		n := len(h.merger.jobsOf(id))
		for _, b := range bm.batches[1:] {
			if slices.Contains(b, id) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s handed over %d times after the first train, want 1", id, n)
		}
	}
	sup := h.runner.jobsOf("c", state.Supervisor)
	if len(sup) != 1 || sup[0].Failure != state.ReasonGate || !strings.Contains(sup[0].FailureLog, "gate.log") {
		t.Errorf("c's supervisor jobs = %+v, want one for the red gate", sup)
	}
	if n := bm.overlaps.Load(); n != 0 {
		t.Errorf("%d merges overlapped", n)
	}
}
