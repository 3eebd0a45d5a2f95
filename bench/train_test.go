package bench

// Landing with a slow gate (#17): the real scheduler in virtual time
// (testing/synctest) over 20-phase DAGs whose agents take 20-60 minutes,
// MAX_PARALLEL 4, and a merge gate that takes 10 minutes per gated commit.
// serial lands one phase at a time (MERGE_BATCH 1), each gated; train
// hands the waiting phases over together (MERGE_BATCH 8) to a merger that
// gates the chain's top and bisects a red one as land.Owner does. 0, 1 or
// 2 phases are culprits: their first merge is red, their supervisor takes
// 10 minutes. The bound is max(critical path, work / 4) plus one gate (the
// last phase to finish must still be gated); it does not count the
// culprits' repairs.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

const (
	trainPhases   = 20
	trainSeeds    = 10
	trainParallel = 4
	trainGate     = 10 * time.Minute
	trainRepair   = 10 * time.Minute
)

// trainDAG is randomDAG's structure with 20-60 minute phases.
func trainDAG(avgDeps int, seed int64) simDAG {
	d := randomDAG(trainPhases, avgDeps, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x7a1))
	for i := range d.phases {
		d.phases[i].dur = 20*time.Minute + time.Duration(rng.Int64N(40*60+1))*time.Second
	}
	return d
}

// gateMerger gates for trainGate per gated commit. A culprit's merge is
// red until its supervisor ran.
type gateMerger struct {
	store *memStore
	mu    sync.Mutex
	red   map[string]bool // culprits not repaired yet
	gates int
	order []string // landed, in order
}

func (m *gateMerger) isRed(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.red[id]
}

func (m *gateMerger) gate() {
	m.mu.Lock()
	m.gates++
	m.mu.Unlock()
	time.Sleep(trainGate)
}

func (m *gateMerger) land(j scheduler.MergeJob) scheduler.MergeOutcome {
	if err := m.store.SetState(j.ID, manifest.Merged); err != nil {
		return scheduler.MergeOutcome{ID: j.ID, Err: err}
	}
	m.mu.Lock()
	m.order = append(m.order, j.ID)
	m.mu.Unlock()
	return scheduler.MergeOutcome{ID: j.ID, OK: true, Commit: "c-" + j.ID}
}

func (m *gateMerger) Merge(ctx context.Context, j scheduler.MergeJob) scheduler.MergeOutcome {
	m.gate()
	if m.isRed(j.ID) {
		return scheduler.MergeOutcome{ID: j.ID, Reason: state.ReasonGate, Detail: "red"}
	}
	return m.land(j)
}

// MergeBatch gates the top, and bisects a red chain as land.Owner does:
// the chain's commit k is red when any of js[0..k] is a culprit.
func (m *gateMerger) MergeBatch(ctx context.Context, js []scheduler.MergeJob) []scheduler.MergeOutcome {
	first := -1
	for k, j := range js {
		if m.isRed(j.ID) {
			first = k
			break
		}
	}
	redAt := func(k int) bool { m.gate(); return first >= 0 && k >= first }
	top := len(js) - 1
	culprit := -1
	if redAt(top) {
		lo, hi := 0, top
		for lo < hi {
			mid := (lo + hi) / 2
			if redAt(mid) {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		culprit = hi
	}
	outs := make([]scheduler.MergeOutcome, len(js))
	for k, j := range js {
		switch {
		case culprit < 0 || k < culprit:
			outs[k] = m.land(j)
		case k == culprit:
			outs[k] = scheduler.MergeOutcome{ID: j.ID, Reason: state.ReasonGate, Detail: "red"}
		default:
			outs[k] = scheduler.MergeOutcome{ID: j.ID, Again: true}
		}
	}
	return outs
}

// serialOnly hides MergeBatch.
type serialOnly struct{ *gateMerger }

func (s serialOnly) Merge(ctx context.Context, j scheduler.MergeJob) scheduler.MergeOutcome {
	return s.gateMerger.Merge(ctx, j)
}

// repairRunner is sleepRunner for workers; a supervisor takes trainRepair
// and repairs the culprit.
type repairRunner struct {
	*sleepRunner
	m *gateMerger
}

func (r repairRunner) Run(ctx context.Context, j scheduler.Job, started func(pgid int)) scheduler.Outcome {
	if j.Role == state.Supervisor {
		t0 := time.Now()
		time.Sleep(trainRepair)
		r.m.mu.Lock()
		delete(r.m.red, j.ID)
		r.m.mu.Unlock()
		return scheduler.Outcome{ID: j.ID, Role: j.Role, Attempt: j.Attempt, OK: true, Tip: "fix-" + j.ID, Started: t0, Ended: time.Now()}
	}
	return r.sleepRunner.Run(ctx, j, started)
}

// gatedBound is the bound when every dependency must land (be gated)
// before its dependent starts, as without stacking: each edge of the
// critical path costs a gate, and the last phase one more.
func gatedBound(d simDAG, par int) time.Duration {
	finish := make([]time.Duration, len(d.phases))
	var cp, total time.Duration
	for i, p := range d.phases {
		var start time.Duration
		for _, dep := range p.deps {
			start = max(start, finish[dep]+trainGate)
		}
		finish[i] = start + p.dur
		cp = max(cp, finish[i])
		total += p.dur
	}
	return max(cp, total/time.Duration(par)) + trainGate
}

// runTrain returns the makespan and the number of gate runs.
func runTrain(d simDAG, batch int, stack bool, culprits []string) (time.Duration, int, error) {
	src := d.manifestText(true)
	rm, err := roadmap.Parse("/sim", src, nil, roadmap.Options{})
	if err != nil {
		return 0, 0, err
	}
	store := &memStore{src: src}
	gm := &gateMerger{store: store, red: map[string]bool{}}
	for _, c := range culprits {
		gm.red[c] = true
	}
	runner := repairRunner{&sleepRunner{dur: map[string]time.Duration{}, scale: time.Minute, start: map[string]time.Time{}, end: map[string]time.Time{}}, gm}
	for _, p := range d.phases {
		runner.dur[p.id] = p.dur
	}
	var merger scheduler.Merger = serialOnly{gm}
	if batch > 1 {
		merger = gm
	}
	s := scheduler.New(scheduler.Config{MaxParallel: trainParallel, MaxSupervisorAttempts: 2, MergeBatch: batch, Stack: stack}, rm, store, runner, merger, nil, nil)
	t0 := time.Now()
	if _, err := s.Run(context.Background()); err != nil {
		return 0, 0, fmt.Errorf("%s batch %d: %w", d.name, batch, err)
	}
	ms := time.Since(t0)
	m, err := store.Read()
	if err != nil {
		return 0, 0, err
	}
	for _, p := range m.Phases {
		if p.State != manifest.Merged {
			return 0, 0, fmt.Errorf("%s batch %d: %s ended [%s]", d.name, batch, p.ID, p.State)
		}
	}
	// No phase landed before a dep (a stacked one must wait for its dep).
	for _, p := range d.phases {
		for _, dep := range p.deps {
			if slices.Index(gm.order, d.phases[dep].id) > slices.Index(gm.order, p.id) {
				return 0, 0, fmt.Errorf("%s batch %d stack %v: %s landed before its dep %s", d.name, batch, stack, p.id, d.phases[dep].id)
			}
		}
	}
	return ms, gm.gates, nil
}

// TestMergeTrainMakespan prints makespan/bound for serial landing, the
// merge train, and the train with speculative stacking (STACK=1). Run it
// with
//
//	CLAUDOPILOT_BENCH=1 go test -run TestMergeTrainMakespan -v ./bench
func TestMergeTrainMakespan(t *testing.T) {
	gate(t)
	for _, deps := range []int{0, 1} {
		for nc := 0; nc <= 2; nc++ {
			var sum [3]float64
			var worst [3]float64
			var gates [3]int
			var gsum float64
			for seed := int64(1); seed <= trainSeeds; seed++ {
				d := trainDAG(max(deps, 0), seed)
				if deps == 0 {
					for i := range d.phases {
						d.phases[i].deps = nil
					}
				}
				lb, _, _ := d.bound(trainParallel)
				lb += trainGate
				rng := rand.New(rand.NewPCG(uint64(seed), 0xc0))
				var culprits []string
				for _, i := range rng.Perm(trainPhases)[:nc] {
					culprits = append(culprits, d.phases[i].id)
				}
				slices.Sort(culprits)
				for k, c := range []struct {
					batch int
					stack bool
				}{{1, false}, {8, false}, {8, true}} {
					batch := c.batch
					var ms time.Duration
					var g int
					var err error
					synctest.Test(t, func(t *testing.T) { ms, g, err = runTrain(d, batch, c.stack, culprits) })
					if err != nil {
						t.Fatal(err)
					}
					r := float64(ms) / float64(lb)
					sum[k] += r
					worst[k] = max(worst[k], r)
					gates[k] += g
					if batch > 1 && !c.stack {
						gsum += float64(ms) / float64(gatedBound(d, trainParallel))
					}
				}
			}
			t.Logf("deps/phase %d, %d culprit(s): serial %.3f mean (worst %.3f, %d gate runs); train %.3f mean (worst %.3f, %d gate runs); train+stack %.3f mean (worst %.3f, %d gate runs) × bound; train %.3f × the bound with a gate per critical-path edge",
				deps, nc, sum[0]/trainSeeds, worst[0], gates[0], sum[1]/trainSeeds, worst[1], gates[1], sum[2]/trainSeeds, worst[2], gates[2], gsum/trainSeeds)
		}
	}
}
