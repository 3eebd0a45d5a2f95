package scheduler

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// capRunner holds every attempt until the test releases it, and checks at
// each start that no lane runs more agents than its slots and the driver
// no more than their sum: the loop's count is the only one (there is no
// second pool inside the runner that could make a launched agent wait).
type capRunner struct {
	caps  map[string]int // slots per lane id ("": the implicit lane of MaxParallel)
	total int

	mu         sync.Mutex
	byLane     map[string]int
	cur, peak  int
	violations []string

	entered chan Job
	release chan struct{}
}

func newCapRunner(caps map[string]int) *capRunner {
	r := &capRunner{caps: caps, byLane: map[string]int{}, entered: make(chan Job, 64), release: make(chan struct{})}
	for _, n := range caps {
		r.total += n
	}
	return r
}

func (r *capRunner) Run(ctx context.Context, j Job, started func(pgid int)) Outcome {
	r.mu.Lock()
	r.cur++
	r.byLane[j.Lane]++
	r.peak = max(r.peak, r.cur)
	if r.cur > r.total || r.byLane[j.Lane] > r.caps[j.Lane] {
		r.violations = append(r.violations, fmt.Sprintf("%s started with %d running (lane %q: %d of %d)", j.ID, r.cur, j.Lane, r.byLane[j.Lane], r.caps[j.Lane]))
	}
	r.mu.Unlock()
	started(1)
	o := Outcome{ID: j.ID, Role: j.Role, Attempt: j.Attempt, Started: time.Now(), OK: true, Tip: "tip-" + j.ID}
	r.entered <- j
	select {
	case <-r.release:
	case <-ctx.Done():
	}
	r.mu.Lock()
	r.cur--
	r.byLane[j.Lane]--
	r.mu.Unlock()
	o.Ended = o.Started.Add(time.Minute)
	return o
}

// saturate lets n attempts run to their end, keeping as many running as
// the caps allow: each one is released only once the loop has filled
// every free slot.
func (r *capRunner) saturate(t *testing.T, n int) {
	t.Helper()
	running := 0
	for done := 0; done < n; done++ {
		for running < min(r.total, n-done) {
			select {
			case <-r.entered:
				running++
			case <-time.After(hangTimeout):
				t.Fatalf("%d agents running, %d done of %d: the loop left a slot free", running, done, n)
			}
		}
		r.release <- struct{}{}
		running--
	}
}

// The loop enforces every cap in every mode: without LANES, MAX_PARALLEL
// over phases and issues together; with LANES, each lane's slots (which
// replace MAX_PARALLEL, docs/lanes.md), for phases and issues alike. Each
// mode runs saturated, and the peak is the cap.
func TestOneSlotCountInEveryMode(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name           string
		phases, issues int
	}{{"phases", 6, 0}, {"issues", 0, 6}, {"phases and issues", 3, 3}} {
		for _, lanes := range []bool{false, true} {
			name := mode.name + ", MAX_PARALLEL"
			cfg := Config{MaxParallel: 2}
			caps := map[string]int{"": 2}
			if lanes {
				name = mode.name + ", LANES"
				cfg = Config{MaxParallel: 1, Lanes: twoLanes(1, 2)}
				caps = map[string]int{"claude": 1, "codex": 2}
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				lines := []string{"[merged] **base** — B (deps: none)"}
				for i := range mode.phases {
					lines = append(lines, fmt.Sprintf("[pending] **p%d** — P (deps: none)", i))
				}
				src := newSource()
				h := sourceHarness(t, manifestOf(lines...), cfg, src)
				r := newCapRunner(caps)
				h.s.runner = r
				var nodes []OutsideNode
				for i := range mode.issues {
					nodes = append(nodes, issueNode(i+1))
				}
				src.ch <- nodes
				close(src.ch)
				done := h.start(context.Background())
				r.saturate(t, mode.phases+mode.issues)
				if _, evs, err := h.await(done); err != nil {
					t.Fatalf("run: %v\n%s", err, fmtEvents(evs))
				}
				for _, v := range r.violations {
					t.Error(v)
				}
				if r.peak != r.total {
					t.Errorf("peak %d agents at once, want the cap %d", r.peak, r.total)
				}
			})
		}
	}
}
