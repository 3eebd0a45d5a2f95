package bench

// Landing with a slow gate (#17, #25 §3): the real scheduler in virtual
// time (testing/synctest) over random 20-phase DAGs whose agents take
// 20-60 minutes, MAX_PARALLEL 4, and a merge gate of G per gate run, G
// drawn per DAG from 1-600 s; 10% of the phases are culprits (their merge
// is red until their supervisor, which takes 10 minutes, ran). The merger
// is a fake SpecMerger: builds and publishes take no time, a gate takes G
// and is red when the commit holds an unrepaired culprit. serial is one
// gate at a time, one phase per commit (GATE_SLOTS 1, MERGE_BATCH 1);
// spec is the speculative train (GATE_SLOTS k, MERGE_BATCH 8).

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
	trainDAGs     = 20
	trainParallel = 4
	trainRepair   = 10 * time.Minute
	trainRedRate  = 0.10
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

// specMerger is the fake SpecMerger: a commit holds its phases and those
// of the commits under it.
type specMerger struct {
	store *memStore
	gate  time.Duration

	mu     sync.Mutex
	red    map[string]bool // culprits not repaired yet
	n      int
	holds  map[string][]string
	gates  int
	order  []string // landed, in order
	errors []string
}

func newSpecMerger(store *memStore, gate time.Duration, culprits []string) *specMerger {
	m := &specMerger{store: store, gate: gate, red: map[string]bool{}, holds: map[string][]string{}}
	for _, c := range culprits {
		m.red[c] = true
	}
	return m
}

func (m *specMerger) Merge(ctx context.Context, j scheduler.MergeJob) scheduler.MergeOutcome {
	m.mu.Lock()
	m.errors = append(m.errors, "Merge called: the speculation was off")
	m.mu.Unlock()
	return scheduler.MergeOutcome{ID: j.ID, Err: fmt.Errorf("unexpected Merge")}
}

func (m *specMerger) Build(ctx context.Context, c scheduler.CarJob) scheduler.CarBuild {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := scheduler.CarBuild{Outs: make([]scheduler.MergeOutcome, len(c.Jobs))}
	on := c.On
	if on == "" {
		on, b.Base = "base", "base"
	}
	m.n++
	b.Commit = fmt.Sprintf("c%d", m.n)
	b.Tree = b.Commit
	m.holds[b.Commit] = append(slices.Clone(m.holds[on]), jobIDs(c.Jobs)...)
	for k, j := range c.Jobs {
		b.Joined, b.Tips, b.Notes = append(b.Joined, k), append(b.Tips, j.Tip), append(b.Notes, "")
	}
	return b
}

func (m *specMerger) GateCar(ctx context.Context, g scheduler.CarGate) scheduler.CarGated {
	m.mu.Lock()
	m.gates++
	m.mu.Unlock()
	select {
	case <-time.After(m.gate):
	case <-ctx.Done():
		return scheduler.CarGated{Err: ctx.Err()}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range m.holds[g.Commit] {
		if m.red[id] {
			return scheduler.CarGated{Log: "red"}
		}
	}
	return scheduler.CarGated{OK: true}
}

func (m *specMerger) Publish(ctx context.Context, p scheduler.CarPublish) scheduler.CarPublished {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, j := range p.Jobs {
		if err := m.store.SetState(j.ID, manifest.Merged); err != nil {
			return scheduler.CarPublished{Out: scheduler.MergeOutcome{Err: err}}
		}
		m.order = append(m.order, j.ID)
	}
	return scheduler.CarPublished{Out: scheduler.MergeOutcome{OK: true, Commit: p.To}}
}

func jobIDs(js []scheduler.MergeJob) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.ID)
	}
	return out
}

// repairRunner is sleepRunner for workers, plus the branch gate (G) when
// the job runs it (Job.NoGate false); a supervisor takes trainRepair and
// repairs the culprit.
type repairRunner struct {
	*sleepRunner
	m *specMerger
}

func (r repairRunner) Run(ctx context.Context, j scheduler.Job, started func(pgid int)) scheduler.Outcome {
	t0 := time.Now()
	if j.Role == state.Supervisor {
		time.Sleep(trainRepair)
		r.m.mu.Lock()
		delete(r.m.red, j.ID)
		r.m.mu.Unlock()
	} else {
		o := r.sleepRunner.Run(ctx, j, started)
		if !o.OK {
			return o
		}
	}
	if !j.NoGate {
		time.Sleep(r.m.gate) // the gate in the phase's worktree
	}
	return scheduler.Outcome{ID: j.ID, Role: j.Role, Attempt: j.Attempt, OK: true, Tip: "tip-" + j.ID, Started: t0, Ended: time.Now()}
}

// gateBound is the bound that counts gates: no schedule under the rules
// does better. Without stacking a phase starts only once its deps have
// landed, and landing takes a gate run (G) after the phase is done, so
// every phase on a path costs its work plus G:
//
//	bound = max( max over paths P of Σ_{i∈P} (d_i + G),   (the gated critical path)
//	             Σ_i d_i / MAX_PARALLEL + G,               (all the work, then the last gate)
//	             ⌈N / (k · B)⌉ · G )                        (k gates at once, B phases a gate)
//
// With stacking a dependent may start on its dep's done tip, so only the
// last gate of a path counts: max over paths Σ d_i + G.
func gateBound(d simDAG, par, k, batch int, g time.Duration, stack bool) time.Duration {
	finish := make([]time.Duration, len(d.phases))
	var cp, total time.Duration
	for i, p := range d.phases {
		var start time.Duration
		for _, dep := range p.deps {
			start = max(start, finish[dep])
		}
		finish[i] = start + p.dur
		if !stack {
			finish[i] += g
		}
		cp = max(cp, finish[i])
		total += p.dur
	}
	if stack {
		cp += g
	}
	rounds := (len(d.phases) + k*batch - 1) / (k * batch)
	return max(cp, total/time.Duration(par)+g, time.Duration(rounds)*g)
}

type trainMode struct {
	name       string
	slots      int
	batch      int
	stack      bool
	branchGate bool // the gate also runs in the phase's worktree
}

// runTrain returns the makespan and the number of merge gate runs.
func runTrain(d simDAG, mode trainMode, g time.Duration, culprits []string) (time.Duration, int, error) {
	src := d.manifestText(true)
	rm, err := roadmap.Parse("/sim", src, nil, roadmap.Options{})
	if err != nil {
		return 0, 0, err
	}
	store := &memStore{src: src}
	sm := newSpecMerger(store, g, culprits)
	runner := repairRunner{&sleepRunner{dur: map[string]time.Duration{}, scale: time.Minute, start: map[string]time.Time{}, end: map[string]time.Time{}}, sm}
	for _, p := range d.phases {
		runner.dur[p.id] = p.dur
	}
	cfg := scheduler.Config{MaxParallel: trainParallel, MaxSupervisorAttempts: 2, MergeBatch: mode.batch, GateSlots: mode.slots, Stack: mode.stack,
		BranchGate: mode.branchGate, TrainWait: 3 * time.Second}
	s := scheduler.New(cfg, rm, store, runner, sm, nil, nil)
	t0 := time.Now()
	if _, err := s.Run(context.Background()); err != nil {
		return 0, 0, fmt.Errorf("%s %s: %w", d.name, mode.name, err)
	}
	ms := time.Since(t0)
	m, err := store.Read()
	if err != nil {
		return 0, 0, err
	}
	for _, p := range m.Phases {
		if p.State != manifest.Merged {
			return 0, 0, fmt.Errorf("%s %s: %s ended [%s]", d.name, mode.name, p.ID, p.State)
		}
	}
	if len(sm.errors) > 0 {
		return 0, 0, fmt.Errorf("%s %s: %v", d.name, mode.name, sm.errors)
	}
	// No phase landed before a dep (a stacked one must wait for its dep).
	for _, p := range d.phases {
		for _, dep := range p.deps {
			if slices.Index(sm.order, d.phases[dep].id) > slices.Index(sm.order, p.id) {
				return 0, 0, fmt.Errorf("%s %s: %s landed before its dep %s", d.name, mode.name, p.id, d.phases[dep].id)
			}
		}
	}
	return ms, sm.gates, nil
}

// TestMergeTrainMakespan prints mean makespan ÷ the gate-counting bound
// over 20 random DAGs (1 dep per phase on average), a gate of 1-600 s and
// 10% red, for serial landing and the speculative train. Run it with
//
//	CLAUDOPILOT_BENCH=1 go test -run TestMergeTrainMakespan -v ./bench
func TestMergeTrainMakespan(t *testing.T) {
	gate(t)
	modes := []trainMode{
		{name: "serial (GATE_SLOTS 1, MERGE_BATCH 1)", slots: 1, batch: 1},
		{name: "train, one gate at a time (GATE_SLOTS 1, MERGE_BATCH 8)", slots: 1, batch: 8},
		{name: "speculative (GATE_SLOTS 2, MERGE_BATCH 8), the default", slots: 2, batch: 8},
		{name: "speculative, the gate also in the worktree", slots: 2, batch: 8, branchGate: true},
		{name: "speculative, GATE_SLOTS 4", slots: 4, batch: 8},
		{name: "speculative + STACK=1", slots: 2, batch: 8, stack: true},
	}
	for _, deps := range []int{0, 1} {
		for _, mode := range modes {
			var sum, worst float64
			gates := 0
			for seed := int64(1); seed <= trainDAGs; seed++ {
				d := trainDAG(max(deps, 1), seed)
				if deps == 0 {
					for i := range d.phases {
						d.phases[i].deps = nil
					}
				}
				rng := rand.New(rand.NewPCG(uint64(seed), 0xc0))
				g := time.Duration(1+rng.IntN(600)) * time.Second
				var culprits []string
				for _, p := range d.phases {
					if rng.Float64() < trainRedRate {
						culprits = append(culprits, p.id)
					}
				}
				lb := gateBound(d, trainParallel, mode.slots, mode.batch, g, mode.stack)
				var ms time.Duration
				var n int
				var err error
				synctest.Test(t, func(t *testing.T) { ms, n, err = runTrain(d, mode, g, culprits) })
				if err != nil {
					t.Fatal(err)
				}
				r := float64(ms) / float64(lb)
				sum += r
				worst = max(worst, r)
				gates += n
			}
			t.Logf("deps/phase %d, %-58s makespan ÷ gate-counting bound: mean %.3f, worst %.3f; %d merge gate runs", deps, mode.name+":", sum/trainDAGs, worst, gates)
		}
	}
}
