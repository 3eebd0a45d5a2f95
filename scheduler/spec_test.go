package scheduler

import (
	"context"
	"fmt"
	"github.com/claudopilot/claudopilot/state"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
)

// specMerger is a fake SpecMerger over a fakeMerger's store. A build names
// its commit and remembers the phases it holds (its own and those of the
// commits under it, down to the base); a gate is red when red says so of
// what the commit holds; a publish marks the phases merged. It checks the
// speculation's rules as it goes: builds one at a time, never more gates
// at once than the slots, a slot never used twice at once, and a publish
// moves the base only along commits that each passed a gate.
type specMerger struct {
	*fakeMerger
	slots int

	mu        sync.Mutex
	red       func(holds []string) bool // nil: every gate green
	hold      map[string]chan struct{}  // the gate of a car led by this phase waits for it
	gateIn    chan []string             // when set, gets each car as its gate starts
	onBuild   func(c CarJob) *CarBuild  // when set and not nil, the build's answer
	onPublish func(p CarPublish) *CarPublished
	n         int
	base      string
	holds     map[string][]string // commit → the phases it holds beyond the first base
	under     map[string]string   // commit → the commit it was built on
	green     map[string]bool
	slotBusy  map[int]bool
	builds    [][]string
	gates     [][]string
	published [][]string
	violation []string

	building  atomic.Int32
	gating    atomic.Int32
	peakGates atomic.Int32
}

func newSpecMerger(fm *fakeMerger, slots int) *specMerger {
	return &specMerger{fakeMerger: fm, slots: slots, base: "base", hold: map[string]chan struct{}{},
		holds: map[string][]string{}, under: map[string]string{}, green: map[string]bool{"base": true}, slotBusy: map[int]bool{}}
}

func ids(js []MergeJob) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.ID)
	}
	return out
}

func (m *specMerger) bad(format string, args ...any) {
	m.violation = append(m.violation, fmt.Sprintf(format, args...))
}

func (m *specMerger) Build(ctx context.Context, c CarJob) CarBuild {
	if m.building.Add(1) != 1 {
		m.mu.Lock()
		m.bad("two builds at once")
		m.mu.Unlock()
	}
	defer m.building.Add(-1)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.builds = append(m.builds, ids(c.Jobs))
	if m.onBuild != nil {
		if b := m.onBuild(c); b != nil {
			return *b
		}
	}
	b := CarBuild{Outs: make([]MergeOutcome, len(c.Jobs))}
	on := c.On
	if on == "" {
		on, b.Base = m.base, m.base
	} else if _, ok := m.holds[on]; !ok {
		m.bad("built on %s, which no build made", on)
	}
	m.n++
	b.Commit = fmt.Sprintf("c%d", m.n)
	b.Tree = "t-" + b.Commit
	m.holds[b.Commit] = append(slices.Clone(m.holds[on]), ids(c.Jobs)...)
	m.under[b.Commit] = on
	for k, j := range c.Jobs {
		b.Joined = append(b.Joined, k)
		b.Tips = append(b.Tips, j.Tip)
		b.Notes = append(b.Notes, "")
	}
	return b
}

func (m *specMerger) GateCar(ctx context.Context, g CarGate) CarGated {
	if n := m.gating.Add(1); n > m.peakGates.Load() {
		m.peakGates.Store(n)
	}
	defer m.gating.Add(-1)
	m.mu.Lock()
	if int(m.gating.Load()) > m.slots {
		m.bad("%d gates at once, %d slots", m.gating.Load(), m.slots)
	}
	if m.slotBusy[g.Slot] || g.Slot >= m.slots {
		m.bad("gate slot %d used twice at once (or out of %d)", g.Slot, m.slots)
	}
	m.slotBusy[g.Slot] = true
	car := ids(g.Jobs)
	m.gates = append(m.gates, car)
	hold, in := m.hold[g.Jobs[0].ID], m.gateIn
	holds := slices.Clone(m.holds[g.Commit])
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.slotBusy[g.Slot] = false
		m.mu.Unlock()
	}()
	if in != nil {
		in <- car
	}
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return CarGated{Err: ctx.Err()}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.red != nil && m.red(holds) {
		return CarGated{Log: "/logs/gate-" + g.Commit + ".log"}
	}
	m.green[g.Commit] = true
	return CarGated{OK: true}
}

func (m *specMerger) Publish(ctx context.Context, p CarPublish) CarPublished {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.onPublish != nil {
		if r := m.onPublish(p); r != nil {
			return *r
		}
	}
	if p.From != m.base {
		return CarPublished{Moved: true}
	}
	for c := p.To; c != p.From; c = m.under[c] {
		if !m.green[c] {
			m.bad("the base moved to %s over %s, which no gate passed", p.To, c)
		}
		if c == "" {
			m.bad("%s is not built on %s", p.To, p.From)
			break
		}
	}
	m.base = p.To
	m.published = append(m.published, ids(p.Jobs))
	for _, j := range p.Jobs {
		if err := m.store.SetState(j.ID, manifest.Merged); err != nil {
			return CarPublished{Out: MergeOutcome{Err: err}}
		}
		m.order = append(m.order, j.ID)
	}
	return CarPublished{Out: MergeOutcome{OK: true, Commit: p.To}}
}

func (m *specMerger) check(t testing.TB) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range m.violation {
		t.Error("spec merger: " + v)
	}
}

// specHarness wires the scheduler over a specMerger.
func specHarness(t *testing.T, text string, cfg Config) (*harness, *specMerger) {
	h := newHarness(t, text, cfg)
	sm := newSpecMerger(h.merger, max(cfg.GateSlots, 1))
	h.ev = newEventLog()
	h.s = New(h.cfg, h.rm, h.store, h.runner, sm, h.jn, h.ev.ch)
	return h, sm
}

func lettersManifest(ids ...string) string {
	var lines []string
	for _, id := range ids {
		lines = append(lines, fmt.Sprintf("[pending] **%s** — %s (deps: none)", id, id))
	}
	return manifestOf(lines...)
}

// culprits is a red rule: a commit holding one of the phases not yet
// repaired (no supervisor ran) is red.
func culprits(h *harness, ids ...string) func([]string) bool {
	return func(holds []string) bool {
		for _, id := range ids {
			if slices.Contains(holds, id) && len(h.runner.jobsOf(id, state.Supervisor)) == 0 {
				return true
			}
		}
		return false
	}
}

// GATE_SLOTS gates run at once, each car on top of the one ahead of it,
// and no more: with two slots and four independent phases done together,
// two gates run at once (base+a, base+a+b), never three; every phase
// lands, and the base moves only along gated commits.
func TestSpecGatesUpToSlotsAtOnce(t *testing.T) {
	t.Parallel()
	h, sm := specHarness(t, lettersManifest("a", "b", "c", "d"), Config{MaxParallel: 4, MaxSupervisorAttempts: 1, MergeBatch: 1, GateSlots: 2})
	release := make(chan struct{})
	sm.gateIn = make(chan []string, 8)
	for _, id := range []string{"a", "b", "c", "d"} {
		sm.hold[id] = release
	}
	ch := h.start(context.Background())
	first := []string{(<-sm.gateIn)[0], (<-sm.gateIn)[0]}
	// Two gates hold; the other two phases are done and queued, and no
	// third gate starts while the two slots are taken.
	for _, id := range []string{"a", "b", "c", "d"} {
		h.ev.wait(t, id+" done", func(e Event) bool { return e.Kind == EvExit && e.Phase == id })
	}
	select {
	case c := <-sm.gateIn:
		t.Fatalf("a third gate (%v) started beside %v with 2 slots", c, first)
	default:
	}
	close(release)
	if _, _, err := h.await(ch); err != nil {
		t.Fatal(err)
	}
	sm.check(t)
	h.store.wantStates(t, allMerged("a", "b", "c", "d"))
	if p := sm.peakGates.Load(); p != 2 {
		t.Errorf("%d gates at once at the most, want 2", p)
	}
	for _, j := range h.runner.allJobs() {
		if !j.NoGate {
			t.Errorf("%s's attempt runs the branch gate; the merge gate proves it", j.ID)
		}
	}
}

// A red car of one phase is taken out: the car behind it is built again
// without it and lands; the culprit fails with reason gate once the car
// ahead of it is green, goes to its supervisor, and lands after the
// repair. Every first-parent commit the base moved over was gated.
func TestSpecRedCarIsTakenOut(t *testing.T) {
	t.Parallel()
	h, sm := specHarness(t, lettersManifest("a", "b", "c"), Config{MaxParallel: 3, MaxSupervisorAttempts: 1, MergeBatch: 1, GateSlots: 3})
	sm.red = culprits(h, "b")
	if _, _, err := h.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	sm.check(t)
	h.store.wantStates(t, allMerged("a", "b", "c"))
	sup := h.runner.jobsOf("b", state.Supervisor)
	if len(sup) != 1 || sup[0].Failure != state.ReasonGate || !strings.Contains(sup[0].FailureLog, "gate-") {
		t.Errorf("b's supervisor jobs = %+v, want one for the red merge gate", sup)
	}
	for _, id := range []string{"a", "c"} {
		if n := len(h.runner.jobsOf(id, state.Supervisor)); n != 0 {
			t.Errorf("%s got %d supervisors; only b was red", id, n)
		}
	}
	for _, p := range sm.published {
		if slices.Contains(p, "b") && len(sup) == 0 {
			t.Errorf("b published before its repair: %v", p)
		}
	}
}

// A red train of several phases is bisected through the speculation: it
// is split in halves, gated again, until the culprit is alone; the rest
// lands, each half as one first-parent commit, and the culprit goes to
// its supervisor. The train forms behind z, whose gate holds while a, b,
// c and d are done (one gate slot: the window is one car).
func TestSpecRedTrainIsBisected(t *testing.T) {
	t.Parallel()
	h, sm := specHarness(t, lettersManifest("z", "a", "b", "c", "d"), Config{MaxParallel: 5, MaxSupervisorAttempts: 1, MergeBatch: 4, GateSlots: 1})
	release := make(chan struct{})
	sm.hold["z"] = release
	sm.gateIn = make(chan []string, 32)
	sm.red = culprits(h, "c")
	zGating := make(chan struct{})
	for _, id := range []string{"a", "b", "c", "d"} {
		h.runner.on(id, state.Worker, step{OK: true, Wait: true, Hold: zGating})
	}
	ch := h.start(context.Background())
	if c := <-sm.gateIn; !slices.Equal(c, []string{"z"}) {
		t.Fatalf("first gate %v, want z alone", c)
	}
	close(zGating)
	for _, id := range []string{"a", "b", "c", "d"} {
		h.ev.wait(t, id+" done", func(e Event) bool { return e.Kind == EvExit && e.Phase == id })
	}
	close(release)
	if _, _, err := h.await(ch); err != nil {
		t.Fatal(err)
	}
	sm.check(t)
	h.store.wantStates(t, allMerged("z", "a", "b", "c", "d"))
	sup := h.runner.jobsOf("c", state.Supervisor)
	if len(sup) != 1 || sup[0].Failure != state.ReasonGate {
		t.Errorf("c's supervisors = %+v, want one for the red gate", sup)
	}
	split := slices.ContainsFunc(sm.gates, func(g []string) bool { return len(g) == 2 })
	if !slices.ContainsFunc(sm.gates, func(g []string) bool { return len(g) == 4 }) || !split {
		t.Errorf("gates %v: want the train of 4, then its halves", sm.gates)
	}
	for _, id := range []string{"a", "b", "d"} {
		if n := len(h.runner.jobsOf(id, state.Supervisor)); n != 0 {
			t.Errorf("%s got a supervisor; only c was red", id)
		}
	}
}

// A car red while a car ahead of it is still gating waits for that
// verdict: the car ahead turns red (the culprit), so the car behind, red
// only because it held the culprit, is gated again without it and lands.
// It never goes to a supervisor. b's agent ends only once a is with the
// merge owner: ended first, b would be built alone on the base and land.
func TestSpecRedBehindAnUndecidedCarIsGatedAgain(t *testing.T) {
	t.Parallel()
	h, sm := specHarness(t, lettersManifest("a", "b"), Config{MaxParallel: 2, MaxSupervisorAttempts: 1, MergeBatch: 1, GateSlots: 2})
	releaseA, bEnds := make(chan struct{}), make(chan struct{})
	sm.hold["a"] = releaseA
	sm.gateIn = make(chan []string, 16)
	sm.red = culprits(h, "a")
	h.runner.on("b", state.Worker, step{OK: true, Wait: true, Hold: bEnds})
	ch := h.start(context.Background())
	h.ev.wait(t, "a merging", isEv(EvMerging, "a"))
	close(bEnds)
	// Wait for both gates, a's (held) and b's on top of it (red, at once).
	got := map[string]bool{}
	for len(got) < 2 {
		c := <-sm.gateIn
		got[c[0]] = true
	}
	// b's red arrives while a's gate holds.
	h.ev.wait(t, "b's red", func(e Event) bool {
		return e.Kind == EvWarn && e.Phase == "b" && strings.Contains(e.Detail, "merge gate red")
	})
	close(releaseA)
	if _, _, err := h.await(ch); err != nil {
		t.Fatal(err)
	}
	sm.check(t)
	h.store.wantStates(t, allMerged("a", "b"))
	if n := len(h.runner.jobsOf("b", state.Supervisor)); n != 0 {
		t.Errorf("b got %d supervisors; its red was a's", n)
	}
	if sup := h.runner.jobsOf("a", state.Supervisor); len(sup) != 1 || sup[0].Failure != state.ReasonGate {
		t.Errorf("a's supervisors = %+v, want one for the red gate", sup)
	}
}

// A phase whose build conflicts with a car ahead (not with the base) goes
// back to the queue and is built later, alone, on the base; it is not
// failed for a conflict with work that has not landed.
func TestSpecConflictAheadIsBuiltOnTheBase(t *testing.T) {
	t.Parallel()
	h, sm := specHarness(t, lettersManifest("a", "b"), Config{MaxParallel: 2, MaxSupervisorAttempts: 1, MergeBatch: 1, GateSlots: 2})
	release := make(chan struct{})
	sm.hold["a"] = release
	var ons []string
	sm.onBuild = func(c CarJob) *CarBuild {
		if c.Jobs[0].ID != "b" {
			return nil
		}
		ons = append(ons, c.On)
		if c.On != "" {
			return &CarBuild{Outs: []MergeOutcome{{ID: "b", Ahead: true, Detail: "conflicts with a"}}}
		}
		return nil
	}
	ch := h.start(context.Background())
	h.ev.wait(t, "b done", func(e Event) bool { return e.Kind == EvExit && e.Phase == "b" })
	h.ev.wait(t, "a done", func(e Event) bool { return e.Kind == EvExit && e.Phase == "a" })
	close(release)
	if _, _, err := h.await(ch); err != nil {
		t.Fatal(err)
	}
	sm.check(t)
	h.store.wantStates(t, allMerged("a", "b"))
	if n := len(h.runner.jobsOf("b", state.Supervisor)); n != 0 {
		t.Errorf("b got a supervisor for a conflict with a car ahead")
	}
	if len(ons) == 0 || ons[len(ons)-1] != "" {
		t.Errorf("b's builds were on %q; the last must be on the base", ons)
	}
}

// A train that would leave short waits (TRAIN_WAIT_SECONDS) for a phase
// whose agent has ended: a and b land as one car. Without the wait, a
// leaves alone.
func TestSpecTrainWaitsForAPhaseAboutToBeDone(t *testing.T) {
	t.Parallel()
	for _, wait := range []time.Duration{time.Minute, 0} {
		h, sm := specHarness(t, lettersManifest("a", "b"), Config{MaxParallel: 2, MaxSupervisorAttempts: 1, MergeBatch: 4, GateSlots: 1, TrainWait: wait})
		bEnded, bGo := make(chan struct{}), make(chan struct{})
		h.runner.on("a", state.Worker, step{OK: true, Wait: true, Hold: bEnded})
		h.runner.onRun = func(j Job) {
			if j.ID == "b" {
				j.Finishing() // b's agent ended; its checks run
				close(bEnded)
				<-bGo
			}
		}
		ch := h.start(context.Background())
		h.ev.wait(t, "a done", func(e Event) bool { return e.Kind == EvExit && e.Phase == "a" })
		if wait == 0 {
			// a leaves alone: its car is built before b is done.
			h.ev.wait(t, "a merging", isEv(EvMerging, "a"))
		}
		close(bGo)
		if _, _, err := h.await(ch); err != nil {
			t.Fatal(err)
		}
		sm.check(t)
		h.store.wantStates(t, allMerged("a", "b"))
		together := slices.ContainsFunc(sm.builds, func(b []string) bool { return slices.Equal(b, []string{"a", "b"}) })
		if wait > 0 && !together {
			t.Errorf("TRAIN_WAIT %v: builds %v, want a and b in one car", wait, sm.builds)
		}
		if wait == 0 && together {
			t.Errorf("no TRAIN_WAIT: builds %v, want a alone first", sm.builds)
		}
	}
}

// A base that moved under the speculation (found at the publish) has
// every car built again on it; they land.
func TestSpecBaseMovedBuildsAgain(t *testing.T) {
	t.Parallel()
	h, sm := specHarness(t, lettersManifest("a", "b"), Config{MaxParallel: 2, MaxSupervisorAttempts: 1, MergeBatch: 1, GateSlots: 2})
	moved := false
	sm.onPublish = func(p CarPublish) *CarPublished {
		if !moved {
			moved = true
			sm.base = "human"
			sm.holds["human"], sm.green["human"] = nil, true
			return &CarPublished{Moved: true}
		}
		return nil
	}
	if _, _, err := h.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	sm.check(t)
	h.store.wantStates(t, allMerged("a", "b"))
	if len(sm.builds) < 3 {
		t.Errorf("builds %v: want the cars built again after the base moved", sm.builds)
	}
}

// An interrupt while speculative gates run stops them; nothing lands and
// the run ends interrupted, with the phases still [running] for the next
// run.
func TestSpecInterruptStopsTheGates(t *testing.T) {
	t.Parallel()
	h, sm := specHarness(t, lettersManifest("a", "b"), Config{MaxParallel: 2, MaxSupervisorAttempts: 1, MergeBatch: 1, GateSlots: 2})
	hold := make(chan struct{}) // never closed: only the interrupt ends the gates
	sm.hold["a"], sm.hold["b"] = hold, hold
	sm.gateIn = make(chan []string, 4)
	ctx, cancel := context.WithCancel(context.Background())
	ch := h.start(ctx)
	<-sm.gateIn
	<-sm.gateIn
	cancel()
	_, _, err := h.await(ch)
	wantErrIs(t, err, ErrInterrupted)
	sm.check(t)
	if len(sm.published) != 0 {
		t.Errorf("published %v after an interrupt", sm.published)
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Running, "b": manifest.Running})
}

// A car that would take the last gate slot waits (TRAIN_WAIT_SECONDS) for
// a phase whose agent still runs: a and b land as one car, where before a
// took the only slot alone and b waited a whole gate behind it (issue 25,
// bench/slowgate.sh). With a slot to spare, a leaves at once: b will find
// a slot of its own. In a synctest bubble: synctest.Wait returns once the
// loop has decided (a built, or waiting on its timer) while b's agent is
// held.
func TestSpecLastSlotWaitsForARunningAgent(t *testing.T) {
	t.Parallel()
	for _, slots := range []int{1, 2} {
		t.Run(fmt.Sprintf("slots=%d", slots), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, sm := specHarness(t, lettersManifest("a", "b"), Config{MaxParallel: 2, MaxSupervisorAttempts: 1, MergeBatch: 4, GateSlots: slots, TrainWait: time.Minute})
				bRuns, bGo := make(chan struct{}), make(chan struct{})
				h.runner.on("a", state.Worker, step{OK: true, Wait: true, Hold: bRuns})
				h.runner.on("b", state.Worker, step{OK: true, Wait: true, Hold: bGo})
				h.runner.onRun = func(j Job) {
					if j.ID == "b" {
						close(bRuns) // b's agent runs; a ends now
					}
				}
				ch := h.start(context.Background())
				synctest.Wait() // a is done and queued; b's agent runs
				close(bGo)
				if _, _, err := h.await(ch); err != nil {
					t.Fatal(err)
				}
				sm.check(t)
				h.store.wantStates(t, allMerged("a", "b"))
				together := slices.ContainsFunc(sm.builds, func(b []string) bool { return slices.Equal(b, []string{"a", "b"}) })
				if slots == 1 && !together {
					t.Errorf("one slot: builds %v, want a and b in one car", sm.builds)
				}
				if slots == 2 && together {
					t.Errorf("two slots: builds %v, want a alone first", sm.builds)
				}
			})
		})
	}
}
