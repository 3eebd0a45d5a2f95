package bench

// Scheduling quality: the real scheduler (scheduler.New/Run) drives random
// 50-phase DAGs with a fake Runner that sleeps each phase's known duration
// and a fake Merger that lands at once. The makespan is compared with the
// lower bound max(critical path, total work / MAX_PARALLEL).
//
// Two harnesses share the code:
//
//   - TestScheduleQuality runs it in virtual time (testing/synctest): the
//     sleeps cost nothing and the makespan is exact and the same on every
//     machine. It only reports; it asserts that every run merged everything,
//     never more than MAX_PARALLEL at once and never before its deps, and
//     nothing about speed. It is skipped unless CLAUDOPILOT_BENCH=1.
//   - BenchmarkScheduleQuality runs the same DAGs with real sleeps (one
//     estimated minute = 1 ms by default, CLAUDOPILOT_BENCH_MS_PER_MIN to
//     change it) and reports makespan/bound as benchmark metrics. It checks
//     that the virtual numbers survive goroutine wake-ups and a busy
//     2-core machine.
//
// TestScheduleQuality also prints three models that run no scheduler code
// (listSim and pollSim below), and TestBashDriverShapes replays the
// roadmaps the team timed with the old Claudopilot bash driver (notice a
// finished worker only at the next POLL_SECONDS tick, pick in file order).

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
)

const (
	simPhases   = 50
	simSeeds    = 20
	simParallel = 4
)

// simFamilies are the DAG shapes measured: manifest.Generate's structure with
// this many deps per phase on average. avg 2 is the headline; 1 is wide
// (total work dominates the bound), 3 is deep (the critical path does).
var simFamilies = []int{2, 1, 3}

// ---------------------------------------------------------------- DAGs

type simPhase struct {
	id   string
	deps []int
	dur  time.Duration // the phase's real duration, in "estimated" time
}

type simDAG struct {
	name   string
	phases []simPhase
}

// randomDAG takes its structure from manifest.Generate(n, avgDeps, seed)
// (deps on earlier phases only, recent ones favoured) and gives each phase a
// duration drawn uniformly from 50m..200m at one-second resolution, so that
// two phases practically never finish at the same instant.
func randomDAG(n, avgDeps int, seed int64) simDAG {
	m, err := manifest.Parse(manifest.Generate(n, avgDeps, seed))
	if err != nil {
		panic(err)
	}
	idx := make(map[string]int, len(m.Phases))
	for i, p := range m.Phases {
		idx[p.ID] = i
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5c4ed))
	d := simDAG{name: fmt.Sprintf("deps%d/seed%02d", avgDeps, seed)}
	for i, p := range m.Phases {
		sp := simPhase{id: fmt.Sprintf("p%02d", i+1)}
		for _, dep := range p.Deps {
			sp.deps = append(sp.deps, idx[dep])
		}
		sp.dur = 50*time.Minute + time.Duration(rng.Int64N(150*60+1))*time.Second
		d.phases = append(d.phases, sp)
	}
	return d
}

// shapeDAG builds a DAG from "id:dur:dep,dep" items, for the fixed shapes.
func shapeDAG(name string, items ...string) simDAG {
	d := simDAG{name: name}
	idx := map[string]int{}
	for i, it := range items {
		f := strings.Split(it, ":")
		dur, err := time.ParseDuration(f[1])
		if err != nil {
			panic(err)
		}
		sp := simPhase{id: f[0], dur: dur}
		if len(f) > 2 && f[2] != "" {
			for _, dep := range strings.Split(f[2], ",") {
				sp.deps = append(sp.deps, idx[dep])
			}
		}
		idx[f[0]] = i
		d.phases = append(d.phases, sp)
	}
	return d
}

// manifestText renders the DAG as a manifest. With est the scheduler knows
// every duration (est: …); without, it weighs every phase as one.
func (d simDAG) manifestText(withEst bool) []byte {
	var b strings.Builder
	b.WriteString("# Execution Manifest\n\n**Status:** in-progress\n\n## Phases\n\n")
	for i, p := range d.phases {
		fmt.Fprintf(&b, "%d. [pending] **%s** — phase %d (deps: ", i+1, p.id, i+1)
		if len(p.deps) == 0 {
			b.WriteString("none")
		}
		for k, dep := range p.deps {
			if k > 0 {
				b.WriteString(", ")
			}
			b.WriteString(d.phases[dep].id)
		}
		b.WriteString(")")
		if withEst {
			fmt.Fprintf(&b, " (est: %s)", p.dur)
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// bound returns max(critical path, total/par) and both terms.
func (d simDAG) bound(par int) (lb, cp, total time.Duration) {
	finish := make([]time.Duration, len(d.phases))
	for i, p := range d.phases { // deps point backwards: file order is topological
		var start time.Duration
		for _, dep := range p.deps {
			start = max(start, finish[dep])
		}
		finish[i] = start + p.dur
		cp = max(cp, finish[i])
		total += p.dur
	}
	return max(cp, total/time.Duration(par)), cp, total
}

// ---------------------------------------------------------------- fakes

// memStore is the live manifest in memory; SetState re-parses and splices
// like roadmap.File does on disk.
type memStore struct {
	mu  sync.Mutex
	src []byte
}

func (m *memStore) SetState(id string, s manifest.State) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	out, err := manifest.Apply(m.src, id, s)
	if err != nil {
		return err
	}
	m.src = out
	return nil
}

func (m *memStore) Read() (*manifest.Manifest, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return manifest.Parse(m.src)
}

func (m *memStore) Source() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return bytes.Clone(m.src), nil
}

// sleepRunner sleeps each phase's duration (scaled) and succeeds. It records
// start and end times and the most phases running at once.
type sleepRunner struct {
	dur   map[string]time.Duration
	scale time.Duration // wall time per estimated minute

	mu         sync.Mutex
	running    int
	maxRunning int
	start, end map[string]time.Time
	calls      int
}

func (r *sleepRunner) Run(ctx context.Context, j scheduler.Job, started func(pgid int)) scheduler.Outcome {
	t0 := time.Now()
	r.mu.Lock()
	r.calls++
	r.running++
	r.maxRunning = max(r.maxRunning, r.running)
	r.start[j.ID] = t0
	r.mu.Unlock()
	time.Sleep(scaled(r.dur[j.ID], r.scale))
	t1 := time.Now()
	r.mu.Lock()
	r.running--
	r.end[j.ID] = t1
	r.mu.Unlock()
	return scheduler.Outcome{ID: j.ID, Role: j.Role, Attempt: j.Attempt, OK: true, Tip: "tip-" + j.ID, Started: t0, Ended: t1}
}

// instantMerger lands every phase at once: it writes [merged] into the
// store, as land.Owner does in the live file.
// scaled converts an estimated duration to wall time at scale per minute.
func scaled(d, scale time.Duration) time.Duration {
	return time.Duration(float64(d) * float64(scale) / float64(time.Minute))
}

type instantMerger struct {
	store *memStore

	mu       sync.Mutex
	inFlight int
	serial   bool
}

func (m *instantMerger) Merge(ctx context.Context, j scheduler.MergeJob) scheduler.MergeOutcome {
	m.mu.Lock()
	m.inFlight++
	if m.inFlight > 1 {
		m.serial = false
	}
	m.mu.Unlock()
	defer func() { m.mu.Lock(); m.inFlight--; m.mu.Unlock() }()
	if err := m.store.SetState(j.ID, manifest.Merged); err != nil {
		return scheduler.MergeOutcome{ID: j.ID, Err: err}
	}
	return scheduler.MergeOutcome{ID: j.ID, OK: true, Commit: "c-" + j.ID}
}

// ---------------------------------------------------------------- runs

type runMode struct {
	name      string
	fileOrder bool
	withEst   bool
}

var schedModes = []runMode{
	{"critical-path", false, true},
	{"critical-path-no-est", false, false},
	{"file-order", true, true},
}

// runScheduler runs the real scheduler over d and returns the makespan in
// estimated time. It fails on anything but a clean run.
func runScheduler(d simDAG, mode runMode, par int, scale time.Duration) (time.Duration, error) {
	src := d.manifestText(mode.withEst)
	rm, err := roadmap.Parse("/sim", src, nil, roadmap.Options{})
	if err != nil {
		return 0, err
	}
	store := &memStore{src: src}
	runner := &sleepRunner{dur: map[string]time.Duration{}, scale: scale, start: map[string]time.Time{}, end: map[string]time.Time{}}
	for _, p := range d.phases {
		runner.dur[p.id] = p.dur
	}
	merger := &instantMerger{store: store, serial: true}
	s := scheduler.New(scheduler.Config{MaxParallel: par, MaxSupervisorAttempts: 1, FileOrder: mode.fileOrder}, rm, store, runner, merger, nil, nil)
	t0 := time.Now()
	if _, err := s.Run(context.Background()); err != nil {
		return 0, fmt.Errorf("%s %s: %w", d.name, mode.name, err)
	}
	wall := time.Since(t0)
	// Sanity: each phase ran once, within the limit, after its deps.
	if runner.calls != len(d.phases) || runner.maxRunning > par || !merger.serial {
		return 0, fmt.Errorf("%s %s: %d runs for %d phases, %d at once (max %d), serial merges %v",
			d.name, mode.name, runner.calls, len(d.phases), runner.maxRunning, par, merger.serial)
	}
	for _, p := range d.phases {
		for _, dep := range p.deps {
			if runner.start[p.id].Before(runner.end[d.phases[dep].id]) {
				return 0, fmt.Errorf("%s %s: %s started before its dep %s ended", d.name, mode.name, p.id, d.phases[dep].id)
			}
		}
	}
	m, err := store.Read()
	if err != nil {
		return 0, err
	}
	for _, p := range m.Phases {
		if p.State != manifest.Merged {
			return 0, fmt.Errorf("%s %s: %s ended [%s]", d.name, mode.name, p.ID, p.State)
		}
	}
	return time.Duration(float64(wall) * float64(time.Minute) / float64(scale)).Round(time.Millisecond), nil
}

// listSim is the discrete-event model of an event-driven list scheduler
// with instant merges: at each finish the phase is merged and then the free
// slots are filled, highest priority first (cp: the heaviest chain of work
// behind a phase, ties in file order, as scheduler.dispatch ranks; else
// file order). With refillFirst the freed slot is filled before the finished
// phase's merge lands, which is what scheduler.Run does in file-order mode.
// Without it, a finished phase's dependents compete for the slot it frees:
// in critical-path mode the scheduler keeps a slot for a phase that becomes
// eligible when a merge under way lands and outranks what is ready, and the
// model then reproduces the real scheduler's makespans exactly.
func listSim(d simDAG, par int, cp, refillFirst bool) time.Duration {
	n := len(d.phases)
	dependents := make([][]int, n)
	for i, p := range d.phases {
		for _, dep := range p.deps {
			dependents[dep] = append(dependents[dep], i)
		}
	}
	rem := make([]time.Duration, n)
	for i := n - 1; i >= 0; i-- { // dependents come later in file order
		for _, c := range dependents[i] {
			rem[i] = max(rem[i], rem[c])
		}
		rem[i] += d.phases[i].dur
	}
	started := make([]bool, n)
	merged := make([]bool, n)
	end := make([]time.Duration, n)
	running := 0
	fill := func(t time.Duration) {
		for running < par {
			best := -1
			for i, p := range d.phases {
				if started[i] {
					continue
				}
				ready := true
				for _, dep := range p.deps {
					ready = ready && merged[dep]
				}
				if ready && (best < 0 || cp && rem[i] > rem[best]) {
					best = i
				}
			}
			if best < 0 {
				return
			}
			started[best], end[best] = true, t+d.phases[best].dur
			running++
		}
	}
	fill(0)
	var t time.Duration
	for left := n; left > 0; left-- {
		next := -1
		for i := range d.phases {
			if started[i] && !merged[i] && (next < 0 || end[i] < end[next]) {
				next = i
			}
		}
		t = end[next]
		running--
		if refillFirst {
			fill(t)
		}
		merged[next] = true
		fill(t)
	}
	return t
}

// pollSim simulates the old Claudopilot bash driver: every poll it notices
// the workers that have finished, merges them (instantly), and starts
// eligible phases in file order up to par. Started at tick 0. It returns
// the time the last finish is noticed.
func pollSim(d simDAG, par int, poll time.Duration) time.Duration {
	const notStarted = -1
	start := make([]time.Duration, len(d.phases))
	for i := range start {
		start[i] = notStarted
	}
	merged := make([]bool, len(d.phases))
	left := len(d.phases)
	for t := time.Duration(0); ; t += poll {
		running := 0
		for i, p := range d.phases {
			if start[i] != notStarted && !merged[i] {
				if start[i]+p.dur <= t {
					merged[i] = true
					left--
				} else {
					running++
				}
			}
		}
		if left == 0 {
			return t
		}
		for i, p := range d.phases {
			if running >= par {
				break
			}
			if start[i] != notStarted {
				continue
			}
			ready := true
			for _, dep := range p.deps {
				ready = ready && merged[dep]
			}
			if ready {
				start[i] = t
				running++
			}
		}
	}
}

type result struct {
	dag      simDAG
	bound    time.Duration
	makespan time.Duration
}

func (r result) ratio() float64 { return float64(r.makespan) / float64(r.bound) }

func meanWorst(rs []result) (mean, worst float64) {
	for _, r := range rs {
		mean += r.ratio()
		worst = max(worst, r.ratio())
	}
	return mean / float64(len(rs)), worst
}

// fmtMin prints an estimated duration in minutes.
func fmtMin(d time.Duration) string { return strconv.FormatFloat(d.Minutes(), 'f', 1, 64) }

// ---------------------------------------------------------------- harnesses

func gate(tb testing.TB) {
	if os.Getenv("CLAUDOPILOT_BENCH") != "1" {
		tb.Skip("a measurement, not a test: set CLAUDOPILOT_BENCH=1 to run it")
	}
}

// TestScheduleQuality prints makespan/bound for every DAG and mode in
// virtual time. Run it with
//
//	CLAUDOPILOT_BENCH=1 go test -run TestScheduleQuality -v ./bench
func TestScheduleQuality(t *testing.T) {
	gate(t)
	// Columns: the real scheduler in three modes, then models (no
	// scheduler code runs in them).
	type column struct {
		name string
		run  func(d simDAG) (time.Duration, error)
	}
	var cols []column
	for _, m := range schedModes {
		cols = append(cols, column{m.name, func(d simDAG) (ms time.Duration, err error) {
			synctest.Test(t, func(t *testing.T) { ms, err = runScheduler(d, m, simParallel, time.Minute) })
			return ms, err
		}})
	}
	cols = append(cols,
		column{"model:refill-first", func(d simDAG) (time.Duration, error) { return listSim(d, simParallel, true, true), nil }},
		column{"model:merge-first", func(d simDAG) (time.Duration, error) { return listSim(d, simParallel, true, false), nil }},
		column{"model:bash-poll5s", func(d simDAG) (time.Duration, error) { return pollSim(d, simParallel, 5*time.Second), nil }},
	)
	for _, fam := range simFamilies {
		t.Run(fmt.Sprintf("deps%d", fam), func(t *testing.T) {
			var sb strings.Builder
			fmt.Fprintf(&sb, "%d random %d-phase DAGs (avg deps %d), MAX_PARALLEL %d, durations 50-200 min; ratio = makespan / max(critical path, work/%d)\n",
				simSeeds, simPhases, fam, simParallel, simParallel)
			fmt.Fprintf(&sb, "%-12s %7s %7s %7s", "dag", "cp", "work/4", "bound")
			for _, c := range cols {
				fmt.Fprintf(&sb, " %*s", max(len(c.name), 9), c.name)
			}
			sb.WriteString("\n")
			results := make([][]result, len(cols))
			for seed := int64(1); seed <= simSeeds; seed++ {
				d := randomDAG(simPhases, fam, seed)
				lb, cp, total := d.bound(simParallel)
				fmt.Fprintf(&sb, "%-12s %7s %7s %7s", d.name, fmtMin(cp), fmtMin(total/simParallel), fmtMin(lb))
				for k, c := range cols {
					ms, err := c.run(d)
					if err != nil {
						t.Fatal(err)
					}
					r := result{d, lb, ms}
					results[k] = append(results[k], r)
					fmt.Fprintf(&sb, " %*.3f", max(len(c.name), 9), r.ratio())
				}
				sb.WriteString("\n")
			}
			for _, row := range []string{"mean", "worst"} {
				fmt.Fprintf(&sb, "%-36s", row)
				for k, c := range cols {
					mean, worst := meanWorst(results[k])
					v := mean
					if row == "worst" {
						v = worst
					}
					fmt.Fprintf(&sb, " %*.3f", max(len(c.name), 9), v)
				}
				sb.WriteString("\n")
			}
			// How often critical-path-first beats, ties or loses to file order.
			var better, same, worse int
			for i := range results[0] {
				a, b := results[0][i].makespan, results[2][i].makespan
				switch {
				case a < b:
					better++
				case a == b:
					same++
				default:
					worse++
				}
			}
			fmt.Fprintf(&sb, "critical-path vs file-order: shorter on %d DAGs, equal on %d, longer on %d\n", better, same, worse)
			// The model of the real loop must agree with it exactly; if it
			// does not, the scheduler changed and the model needs a look.
			for i := range results[0] {
				if results[0][i].makespan != results[4][i].makespan {
					fmt.Fprintf(&sb, "note: %s: critical-path %s != model:merge-first %s\n", results[0][i].dag.name, results[0][i].makespan, results[4][i].makespan)
				}
			}
			t.Log("\n" + sb.String())
		})
	}
}

// TestBashDriverShapes replays the two roadmaps the team timed with the bash
// driver (POLL_SECONDS=5, MAX_PARALLEL=2, agents that sleep) through the
// poll simulation and, in virtual time, through the real scheduler.
//
//	CLAUDOPILOT_BENCH=1 go test -run TestBashDriverShapes -v ./bench
func TestBashDriverShapes(t *testing.T) {
	gate(t)
	shapes := []struct {
		dag      simDAG
		measured string
	}{
		// 6-phase diamond, 1 s agents: a fans out to four, which fan in.
		{shapeDAG("diamond-6 (1s)", "a:1s", "b:1s:a", "c:1s:a", "d:1s:a", "e:1s:a", "f:1s:b,c,d,e"), "21.7 s (7.2x)"},
		// 9 phases, 2 s agents, one fans out to seven, which fan in. The
		// notes do not record the shape; this one has the stated bound
		// (9 s) and the measured number of polls.
		{shapeDAG("fan-9 (2s)", "a:2s", "b:2s:a", "c:2s:a", "d:2s:a", "e:2s:a", "f:2s:a", "g:2s:a", "h:2s:a", "i:2s:b,c,d,e,f,g,h"), "33.2 s (3.7x)"},
		// The demo roadmap (examples/demo), 1 s agents.
		{shapeDAG("demo-8 (1s)", "p1:1s", "p2:1s:p1", "p3:1s:p1", "p4:1s:p1", "p5:1s:p2", "p6:1s:p3", "p7:1s:p4", "p8:1s:p5,p6,p7"), "-"},
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-16s %6s %14s %14s %14s %14s\n", "roadmap", "bound", "bash measured", "poll-5s sim", "critical-path", "file-order")
	for _, s := range shapes {
		lb, _, _ := s.dag.bound(2)
		poll := pollSim(s.dag, 2, 5*time.Second)
		var cp, fo time.Duration
		var err error
		synctest.Test(t, func(t *testing.T) {
			if cp, err = runScheduler(s.dag, schedModes[0], 2, time.Minute); err == nil {
				fo, err = runScheduler(s.dag, schedModes[2], 2, time.Minute)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		f := func(d time.Duration) string {
			return fmt.Sprintf("%.1f s (%.1fx)", d.Seconds(), float64(d)/float64(lb))
		}
		fmt.Fprintf(&sb, "%-16s %5.0fs %14s %14s %14s %14s\n", s.dag.name, lb.Seconds(), s.measured, f(poll), f(cp), f(fo))
	}
	t.Log("\n" + sb.String())
}

// BenchmarkScheduleQuality runs the same DAGs with real sleeps: one
// estimated minute is CLAUDOPILOT_BENCH_MS_PER_MIN ms (default 1, so phases
// take 50-200 ms). One iteration runs all 20 DAGs of the avg-2 family (about
// 40 s per mode). With -benchtime Nx each DAG's shortest makespan of the N
// runs counts, which filters out the stalls of a busy machine.
//
//	CLAUDOPILOT_BENCH=1 go test -run XXX -bench ScheduleQuality -benchtime 3x ./bench
//
// Metrics: makespan/bound (mean over the DAGs), worst-makespan/bound, and
// wall/model: the measured makespan over the virtual-time model's (1.000 =
// the real loop, goroutines and sleeps add nothing).
func BenchmarkScheduleQuality(b *testing.B) {
	gate(b)
	scale := time.Millisecond
	if v := os.Getenv("CLAUDOPILOT_BENCH_MS_PER_MIN"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			b.Fatalf("CLAUDOPILOT_BENCH_MS_PER_MIN=%q", v)
		}
		scale = time.Duration(f * float64(time.Millisecond))
	}
	dags := make([]simDAG, simSeeds)
	for i := range dags {
		dags[i] = randomDAG(simPhases, simFamilies[0], int64(i+1))
	}
	for _, m := range schedModes {
		b.Run(m.name, func(b *testing.B) {
			best := make([]time.Duration, len(dags))
			for b.Loop() {
				for i, d := range dags {
					ms, err := runScheduler(d, m, simParallel, scale)
					if err != nil {
						b.Fatal(err)
					}
					if best[i] == 0 || ms < best[i] {
						best[i] = ms
					}
				}
			}
			var rs []result
			var drift float64
			var sb strings.Builder
			for i, d := range dags {
				lb, _, _ := d.bound(simParallel)
				r := result{d, lb, best[i]}
				rs = append(rs, r)
				model := listSim(d, simParallel, !m.fileOrder, m.fileOrder)
				if !m.withEst {
					model = 0 // the model ranks by estimates; no comparison
				} else {
					drift += float64(best[i]) / float64(model)
				}
				fmt.Fprintf(&sb, "%s %.3f  ", d.name[len(d.name)-2:], r.ratio())
			}
			mean, worst := meanWorst(rs)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(mean, "makespan/bound")
			b.ReportMetric(worst, "worst-makespan/bound")
			if m.withEst {
				b.ReportMetric(drift/float64(len(dags)), "wall/model")
			}
			b.Log(sb.String())
		})
	}
}
