package scheduler

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
)

// A manifest phase that depends on an issue "#7" waits, polling, until the
// issue is done; then it runs and merges. Phases without such deps go on
// meanwhile.
func TestExternalDepWaitsUntilDone(t *testing.T) {
	t.Parallel()
	text := manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: a, #7)",
	)
	var done atomic.Bool
	asked := make(chan struct{}, 100)
	rm, err := roadmap.Parse("/rm", []byte(text), nil, roadmap.Options{External: roadmap.IsIssueRef})
	if err != nil {
		t.Fatal(err)
	}
	store := newMemStore(text)
	h := &harness{t: t, rm: rm, store: store, runner: newRunner(2), merger: newMerger(store)}
	h.cfg = Config{MaxParallel: 2, Poll: 5 * time.Millisecond, ExternalDone: func(id string) bool {
		if id != "#7" {
			t.Errorf("asked about %q", id)
		}
		select {
		case asked <- struct{}{}:
		default:
		}
		return done.Load()
	}}
	ch := h.start(context.Background())
	h.ev.wait(t, "a merged", isEv(EvMerged, "a"))
	// b is asked about again and again while #7 is open, and not run.
	for i := 0; i < 3; i++ {
		select {
		case <-asked:
		case <-time.After(30 * time.Second):
			t.Fatal("the scheduler stopped asking about #7")
		}
	}
	if n := h.runner.callsOf("b"); n != 0 {
		t.Fatalf("b ran %d times while #7 was open", n)
	}
	done.Store(true)
	res := <-ch
	if res.err != nil {
		t.Fatalf("Run: %v", res.err)
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Merged, "b": manifest.Merged})
}

// Without queue mode an issue dep is a clear error, not "unknown phase".
func TestIssueDepNeedsQueueMode(t *testing.T) {
	t.Parallel()
	_, err := roadmap.Parse("/rm", []byte("1. [pending] **b** — b (deps: #7)\n"), nil, roadmap.Options{})
	if err == nil || !strings.Contains(err.Error(), "depends on issue #7, which only queue mode knows") {
		t.Fatalf("err = %v", err)
	}
}

// The issue queue ends right after its last look at GitHub, which found
// #7 done: ExternalDone turns true no later than ExternalWait turns false.
// A run that sees the queue ended must also see what it found, and run b,
// not end with "nothing can progress" (seen in run --issues: the queue
// merged #1, then the run stopped with p1 pending).
func TestExternalDepDoneAsTheQueueEnds(t *testing.T) {
	t.Parallel()
	text := manifestOf("[pending] **b** — b (deps: #7)")
	rm, err := roadmap.Parse("/rm", []byte(text), nil, roadmap.Options{External: roadmap.IsIssueRef})
	if err != nil {
		t.Fatal(err)
	}
	var done, ended atomic.Bool
	store := newMemStore(text)
	h := &harness{t: t, rm: rm, store: store, runner: newRunner(1), merger: newMerger(store)}
	h.cfg = Config{MaxParallel: 1, Poll: time.Hour,
		ExternalDone: func(string) bool { return done.Load() },
		// The first time the loop asks whether waiting may pay, the queue
		// finishes: its last refresh, then its end.
		ExternalWait: func() bool {
			if !ended.Load() {
				done.Store(true)
				ended.Store(true)
			}
			return false
		},
	}
	res := <-h.start(context.Background())
	if res.err != nil {
		t.Fatalf("Run: %v", res.err)
	}
	h.store.wantStates(t, map[string]manifest.State{"b": manifest.Merged})
}
