package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/state"
)

// Speculative parallel gates (GATE_SLOTS, docs/landing.md), the shape of
// Zuul's dependent pipeline. The done phases waiting to land are taken in
// cars: a car is a train of up to MergeBatch phases that lands as ONE
// first-parent commit (its phases merged on a side line, then that line
// merged once), so every first-parent commit on the base is a commit that
// passed the gate, whatever the settings, and bisection keeps its steps.
// Up to GATE_SLOTS cars are gated at once, each on top of those ahead of
// it: base+A, base+A+B, ...
//
//   - The longest run of green cars at the front lands in one move of the
//     base ref: exactly the commits gated.
//   - A red car of several phases is split in two halves, gated again
//     (bisection through the same slots); a red car of one phase is taken
//     out: the cars behind it are built again without it, and it goes to
//     its supervisor once every car ahead of it is green (until then its
//     red may be theirs; if one of them turns red, it is gated again).
//   - The window (how many cars speculate) grows by one after a landing,
//     up to GATE_SLOTS, and halves after a red, never below one.
//   - A phase predicted to conflict with one in the speculation waits for
//     it to land; one whose build conflicts with a car ahead (not the
//     base) goes back to the queue, to be built on the base.
//   - A car that would leave with fewer phases than it may hold waits up
//     to TrainWait for phases whose agents have ended (their checks run),
//     and, when it takes the window's last place, for phases whose agents
//     still run.
//
// The loop owns all of it; builds, gates and publishes run in goroutines
// and report on spec.results.

// car is one first-parent commit of the speculation.
type car struct {
	ps     []*phase
	jobs   []MergeJob
	tips   []string
	notes  []string
	built  bool
	commit string
	tree   string
	gating bool
	green  bool
	// out: red while a car ahead is not green yet: taken out of the
	// speculation (the cars behind are built without it); its verdict
	// waits for the cars ahead.
	out    bool
	log    string
	detail string // the red gate's
	flaky  string
	stop   context.CancelFunc // stops its gate
}

type specKind int

const (
	specBuilt specKind = iota
	specGated
	specPublished
)

// specResult is what a build, gate or publish goroutine reports.
type specResult struct {
	kind  specKind
	car   *car
	cars  []*car // a publish's
	slot  int
	build CarBuild
	gated CarGated
	pub   CarPublished
}

// specState is the loop's speculation. Only the loop touches it.
type specState struct {
	m          SpecMerger
	cars       []*car
	window     int
	slots      []bool // gate slots in use: a gate that still runs holds its slot, even for a car dropped
	building   bool   // a build in flight
	publishing bool
	landing    []*phase // the phases a publish in flight lands
	ops        int      // goroutines in flight
	results    chan specResult
	base       string    // the base tip the front car sits on
	moves      int       // publishes in a row that found the base moved
	retryAt    time.Time // a waiting publish is tried again then
	waitFor    string    // the phase whose wait a watch may end early
	trainAt    time.Time // a car forming waits for arrivals until then
}

// specOn is true when the merge owner speculates: a SpecMerger, and no
// review gate (a review holds for one exact base).
func (s *Scheduler) specOn() bool {
	return s.spec.m != nil && !s.reviewOn()
}

// gateSlots is GATE_SLOTS, at least 1.
func (s *Scheduler) gateSlots() int { return max(s.cfg.GateSlots, 1) }

// inSpec is true for a phase one of the speculation's cars holds.
func (s *Scheduler) inSpec(p *phase) bool {
	return s.carOf(p) != nil
}

func (s *Scheduler) carOf(p *phase) *car {
	for _, c := range s.spec.cars {
		if slices.Contains(c.ps, p) {
			return c
		}
	}
	return nil
}

// specAhead is true when p is in a car that is not taken out.
func (s *Scheduler) specAhead(p *phase) bool {
	c := s.carOf(p)
	return c != nil && !c.out
}

// mergeHeld is true for a phase the merge owner holds now.
func (s *Scheduler) mergeHeld(p *phase) bool {
	return s.merging == p || s.inSpec(p)
}

// dispatchSpec moves the speculation on: verdicts at the front, a landing
// of the green cars there, new cars from the queue, the next build, free
// gate slots.
func (s *Scheduler) dispatchSpec(ctx context.Context, now time.Time) {
	if s.spec.window == 0 {
		s.spec.window = s.gateSlots()
		s.spec.slots = make([]bool, s.gateSlots())
	}
	s.settleOut()
	s.specPublish(ctx, now)
	s.conflictOrder()
	s.specFill(now)
	s.specBuild(ctx)
	s.specGate(ctx)
}

// active counts the cars that speculate (not taken out).
func (s *Scheduler) active() int {
	n := 0
	for _, c := range s.spec.cars {
		if !c.out {
			n++
		}
	}
	return n
}

// specFill forms cars from the merge queue while the window has room.
func (s *Scheduler) specFill(now time.Time) {
	s.spec.trainAt = time.Time{}
	for s.active() < s.spec.window {
		ps := s.formCar(now)
		if len(ps) == 0 {
			return
		}
		s.mergeQ = slices.DeleteFunc(s.mergeQ, func(p *phase) bool { return slices.Contains(ps, p) })
		c := &car{ps: ps}
		for _, p := range ps {
			p.busy = true
			s.emit(Event{Kind: EvMerging, Phase: p.n.ID})
		}
		s.spec.cars = append(s.spec.cars, c)
	}
}

// formCar picks the next car's phases from the merge queue, in queue
// order: the first due phase that may join, and after it those with the
// same gate, up to MergeBatch. Nil when none may, or the car waits for
// phases about to be done.
func (s *Scheduler) formCar(now time.Time) []*phase {
	var ps []*phase
	for _, p := range s.mergeQ {
		if len(ps) == max(s.cfg.MergeBatch, 1) {
			break
		}
		if p.notBefore.After(now) || !s.mayJoin(p, ps) {
			continue
		}
		if len(ps) > 0 && (s.gateOf(p) != s.gateOf(ps[0]) || p.solo) {
			continue
		}
		ps = append(ps, p)
		if p.solo {
			break // built alone, on the base
		}
	}
	if len(ps) == 0 || len(ps) == max(s.cfg.MergeBatch, 1) || ps[0].solo || s.cfg.TrainWait <= 0 {
		return ps
	}
	// A train that would leave short waits a moment for phases whose
	// agents have ended, when they could join it. One that would take the
	// window's last place also waits for phases whose agents still run:
	// one done a moment after it left would find no place and wait a
	// whole gate (issue 25, bench/slowgate.sh: a level's first phase took
	// the last slot alone, the rest waited 10 s for it).
	until := ps[0].queuedAt.Add(s.cfg.TrainWait)
	if !now.Before(until) {
		return ps
	}
	last := s.active()+1 >= s.spec.window
	for _, q := range s.phases {
		arriving := q.finishing || last && q.attempting
		if arriving && q.busy && !s.inSpec(q) && s.gateOf(q) == s.gateOf(ps[0]) {
			s.spec.trainAt = until
			return nil
		}
	}
	return ps
}

// mayJoin tells whether p may join the speculation now, in a car after
// those there and after the phases ps already chosen for the next one.
func (s *Scheduler) mayJoin(p *phase, ps []*phase) bool {
	if p.solo && (s.active() > 0 || len(ps) > 0) {
		return false // conflicted with a car ahead: built on the base
	}
	held := func(q *phase) bool { return s.specAhead(q) || slices.Contains(ps, q) }
	for _, d := range s.rm.Deps(p.n) {
		q := s.phases[d.Index]
		if q.state != manifest.Merged && !held(q) {
			return false // stacked on a dep that is not ahead of it
		}
	}
	for other := range s.pred.paired[p.n.ID] {
		if q := s.byID[other]; q != nil && held(q) {
			return false // predicted to conflict with a phase ahead
		}
	}
	return true
}

// specBuild starts the build of the first car not built yet, on the
// commit of the car ahead of it; builds go one at a time, in order.
func (s *Scheduler) specBuild(ctx context.Context) {
	if s.spec.building {
		return
	}
	on := ""
	var done []*phase // phases merged, or in a car ahead
	for _, c := range s.spec.cars {
		if c.out {
			continue
		}
		if c.built {
			on = c.commit
			done = append(done, c.ps...)
			continue
		}
		cj := CarJob{On: on}
		for k, p := range c.ps {
			cj.Jobs = append(cj.Jobs, s.mergeJob(p, append(done, c.ps[:k+1]...)))
		}
		c.jobs = cj.Jobs
		s.spec.building = true
		s.specGo(func() specResult { return specResult{kind: specBuilt, car: c, build: s.spec.m.Build(ctx, cj)} })
		return
	}
}

// mergeJob is p's MergeJob; it completes the manifest when every other
// phase is merged or in lands (landing with or before it).
func (s *Scheduler) mergeJob(p *phase, lands []*phase) MergeJob {
	complete := true
	for _, q := range s.phases {
		if q != p && !q.n.Outside && q.state != manifest.Merged && !slices.Contains(lands, q) {
			complete = false
			break
		}
	}
	j := MergeJob{ID: p.n.ID, Title: p.n.Title, Owns: p.n.Owns, Tip: p.tip, Gate: s.gateOf(p), Complete: complete}
	j.Gating = func() { s.stages <- Event{Time: s.now(), Kind: EvGate, Phase: j.ID, Detail: "merge"} }
	return j
}

// specGo runs op in a goroutine that reports on spec.results.
func (s *Scheduler) specGo(op func() specResult) {
	if s.spec.results == nil {
		s.spec.results = make(chan specResult)
	}
	s.spec.ops++
	out := s.spec.results
	go func() { out <- op() }()
}

// specGate starts the gates of built cars, front first, in free slots.
func (s *Scheduler) specGate(ctx context.Context) {
	for i, c := range s.spec.cars {
		if c.out || !c.built || c.gating || c.green || i >= s.spec.window+s.outBefore(i) {
			continue
		}
		slot := slices.Index(s.spec.slots, false)
		if slot < 0 {
			return
		}
		s.spec.slots[slot] = true
		gctx, stop := context.WithCancel(ctx)
		c.gating, c.stop = true, stop
		g := CarGate{Commit: c.commit, Tree: c.tree, Jobs: c.jobs, Slot: slot}
		s.specGo(func() specResult {
			defer stop()
			return specResult{kind: specGated, car: c, slot: slot, gated: s.spec.m.GateCar(gctx, g)}
		})
	}
}

// outBefore counts the cars before index i that are taken out.
func (s *Scheduler) outBefore(i int) int {
	n := 0
	for _, c := range s.spec.cars[:i] {
		if c.out {
			n++
		}
	}
	return n
}

// specPublish lands the green cars at the front in one move of the base.
func (s *Scheduler) specPublish(ctx context.Context, now time.Time) {
	if s.spec.publishing || s.spec.retryAt.After(now) {
		return
	}
	var cars []*car
	for _, c := range s.spec.cars {
		if c.out || !c.green {
			break
		}
		cars = append(cars, c)
	}
	if len(cars) == 0 {
		return
	}
	p := CarPublish{From: s.spec.base, To: cars[len(cars)-1].commit}
	for _, c := range cars {
		p.Jobs = append(p.Jobs, c.jobs...)
		p.Tips = append(p.Tips, c.tips...)
	}
	s.spec.publishing = true
	s.spec.landing = nil
	for _, c := range cars {
		s.spec.landing = append(s.spec.landing, c.ps...)
	}
	if s.spec.waitFor != "" {
		// Tried again after a wait: the merge owner takes them again.
		for _, p := range s.spec.landing {
			s.emit(Event{Kind: EvMerging, Phase: p.n.ID})
		}
	}
	s.specGo(func() specResult {
		return specResult{kind: specPublished, cars: cars, pub: s.spec.m.Publish(ctx, p)}
	})
}

// onSpec books what a build, gate or publish reported.
func (s *Scheduler) onSpec(r specResult) {
	s.spec.ops--
	switch r.kind {
	case specBuilt:
		s.spec.building = false
		s.onBuilt(r.car, r.build)
	case specGated:
		s.spec.slots[r.slot] = false
		s.onGated(r.car, r.gated)
	case specPublished:
		s.spec.publishing, s.spec.landing = false, nil
		s.onPublished(r.cars, r.pub)
	}
}

// specAfterInterrupt books a result that came after an interrupt: a
// landing is booked; nothing else changes.
func (s *Scheduler) specAfterInterrupt(r specResult) {
	s.spec.ops--
	switch r.kind {
	case specBuilt:
		s.spec.building = false
	case specGated:
		s.spec.slots[r.slot] = false
	case specPublished:
		s.spec.publishing, s.spec.landing = false, nil
		if r.pub.Out.OK {
			for _, c := range r.cars {
				for _, j := range c.jobs {
					s.mergedAfterInterrupt(MergeOutcome{ID: j.ID, OK: true, Commit: c.commit})
				}
			}
		}
	}
	for _, c := range s.spec.cars {
		for _, p := range c.ps {
			p.busy = false
		}
	}
	if s.spec.ops == 0 {
		s.spec.cars = nil
	}
}

func (s *Scheduler) onBuilt(c *car, b CarBuild) {
	i := slices.Index(s.spec.cars, c)
	if i < 0 {
		return // dissolved meanwhile: its phases are back in the queue
	}
	if b.Err != nil {
		s.fatal = fmt.Errorf("merge %s: %w", c.ps[0].n.ID, b.Err)
		s.dissolve(i)
		return
	}
	if b.Waiting != "" {
		first := c.ps[0]
		s.dissolve(i)
		s.mergeQ = slices.DeleteFunc(s.mergeQ, func(p *phase) bool { return p == first })
		s.onMerge(MergeOutcome{ID: first.n.ID, Waiting: b.Waiting})
		return
	}
	s.beginGroup()
	defer s.endGroup()
	var keep []*phase
	var jobs []MergeJob
	var back []*phase
	for k, p := range c.ps {
		if j := slices.Index(b.Joined, k); j >= 0 {
			keep, jobs = append(keep, p), append(jobs, c.jobs[k])
			continue
		}
		out := b.Outs[k]
		out.ID = p.n.ID
		switch {
		case out.Again || out.Ahead:
			p.busy = false
			p.solo = p.solo || out.Ahead
			back = append(back, p)
		default:
			s.onMerge(out) // landed before, or refused
		}
	}
	s.mergeQ = append(back, s.mergeQ...)
	if len(keep) == 0 {
		s.spec.cars = slices.Delete(s.spec.cars, i, i+1)
		return
	}
	c.ps, c.jobs, c.tips, c.notes = keep, jobs, b.Tips, b.Notes
	c.built, c.commit, c.tree = true, b.Commit, b.Tree
	if b.Base != "" {
		s.spec.base = b.Base
	}
}

func (s *Scheduler) onGated(c *car, g CarGated) {
	i := slices.Index(s.spec.cars, c)
	if i < 0 || !c.gating {
		return // dissolved meanwhile
	}
	c.gating, c.stop = false, nil
	c.flaky = g.Flaky
	switch {
	case g.Err != nil:
		s.fatal = fmt.Errorf("merge %s: %w", c.ps[0].n.ID, g.Err)
		c.log = g.Log
	case g.OK:
		c.green = true
	default:
		c.log, c.detail = g.Log, g.Detail
		if c.detail == "" {
			c.detail = "the gate is red on the merge: see " + g.Log
		}
		s.onRed(i)
	}
}

// onRed handles the red gate of car i: the cars behind it are built
// again without it; a car of several phases is split in two, a car of one
// is taken out, and fails once every car ahead of it is green.
func (s *Scheduler) onRed(i int) {
	c := s.spec.cars[i]
	s.spec.window = max(1, s.spec.window/2)
	s.dissolve(i + 1)
	if len(c.ps) > 1 {
		// Bisect: the halves are built and gated again.
		s.emit(Event{Kind: EvWarn, Phase: c.ps[0].n.ID, Detail: "merge gate red on the train " + carName(c) + ": its halves are gated again (" + c.detail + ")"})
		h := len(c.ps) / 2
		a, b := &car{ps: c.ps[:h]}, &car{ps: c.ps[h:]}
		s.spec.cars = append(s.spec.cars[:i], a, b)
		return
	}
	c.out = true
	s.settleOut()
	if slices.Contains(s.spec.cars, c) {
		s.emit(Event{Kind: EvWarn, Phase: c.ps[0].n.ID, Detail: "merge gate red while merges ahead of it are gated: its verdict waits for theirs (" + c.detail + ")"})
	}
}

// carName names a car's phases for a message.
func carName(c *car) string {
	var ids []string
	for _, p := range c.ps {
		ids = append(ids, p.n.ID)
	}
	return strings.Join(ids, ", ")
}

// settleOut fails each car taken out whose cars ahead are all green: its
// red is its own.
func (s *Scheduler) settleOut() {
	for i := 0; i < len(s.spec.cars); i++ {
		c := s.spec.cars[i]
		if !c.out {
			if !c.green {
				return // the verdicts behind it wait
			}
			continue
		}
		s.spec.cars = slices.Delete(s.spec.cars, i, i+1)
		detail := c.detail
		if i > 0 {
			detail = fmt.Sprintf("%s (on top of %d green merge(s) landing before it)", c.detail, i)
		}
		i--
		s.onMerge(MergeOutcome{ID: c.ps[0].n.ID, Reason: state.ReasonGate, Detail: detail, LogPath: c.log})
	}
}

// dissolve drops the cars from index i on: their gates stop, and their
// phases go back to the front of the queue, in order.
func (s *Scheduler) dissolve(i int) {
	if i >= len(s.spec.cars) {
		return
	}
	var back []*phase
	for _, c := range s.spec.cars[i:] {
		if c.stop != nil {
			c.stop()
		}
		for _, p := range c.ps {
			p.busy = false
			back = append(back, p)
		}
	}
	s.spec.cars = s.spec.cars[:i]
	s.mergeQ = append(back, s.mergeQ...)
}

// specRelease takes p out of the speculation (its dep failed): its car
// and those behind go back to the queue.
func (s *Scheduler) specRelease(p *phase) {
	if c := s.carOf(p); c != nil {
		s.dissolve(slices.Index(s.spec.cars, c))
	}
}

func (s *Scheduler) onPublished(cars []*car, pub CarPublished) {
	out := pub.Out
	switch {
	case out.OK:
		s.spec.moves = 0
		s.spec.retryAt, s.spec.waitFor = time.Time{}, ""
		s.spec.base = cars[len(cars)-1].commit
		s.spec.cars = slices.DeleteFunc(s.spec.cars, func(c *car) bool { return slices.Contains(cars, c) })
		s.spec.window = min(s.gateSlots(), s.spec.window+1)
		// An edit saved while the checkout moved is applied once every
		// landing is booked.
		later := s.editLater
		s.editLater = false
		if later {
			defer s.onEdit(nil)
		}
		// One fsync for every landing's record, before any is told.
		s.beginGroup()
		defer s.endGroup()
		for _, c := range cars {
			for k, p := range c.ps {
				m := MergeOutcome{ID: p.n.ID, OK: true, Commit: c.commit, Flaky: c.flaky}
				if k < len(c.notes) {
					m.Detail = c.notes[k]
				}
				if c == cars[len(cars)-1] && k == len(c.ps)-1 {
					m.Detail = joinDetail(m.Detail, out.Detail)
				}
				s.onMerge(m)
			}
		}
	case pub.Moved:
		// The base moved under the cars: all are built again on it.
		s.spec.moves++
		s.dissolve(0)
		if s.spec.moves >= mergeAttempts {
			s.spec.moves = 0
			s.specWait(cars[0].ps[0], MergeOutcome{Waiting: "the base keeps moving (" + fmt.Sprint(mergeAttempts) + " builds in a row found it moved); the merge lands when it settles"})
		}
	case out.Err != nil:
		s.fatal = fmt.Errorf("merge %s: %w", cars[0].ps[0].n.ID, out.Err)
	default:
		s.specWait(cars[0].ps[0], out)
	}
}

// mergeAttempts bounds how often the speculation is built again because
// the base moved under it before the landing waits, as a merge does.
const mergeAttempts = 5

// specWait says what the landing of the cars at the front (p's) waits
// for, once, and tries again after a pause, or when the watch of what it
// waits on fires.
func (s *Scheduler) specWait(p *phase, m MergeOutcome) {
	p.waitRounds++
	delay := s.cfg.Poll
	if len(m.Wait) == 0 {
		delay = min(s.cfg.Poll*time.Duration(min(p.waitRounds, 12)), time.Minute)
	}
	s.spec.retryAt, s.spec.waitFor = s.now().Add(delay), p.n.ID
	if m.Changed != nil {
		s.watchWait(p.n.ID, m.Changed)
	}
	detail := WaitDetail(m.Wait, m.Waiting)
	if detail != p.waiting {
		p.waiting = detail
		s.record(state.Record{Phase: p.n.ID, Event: "wait", Detail: detail, Files: m.Wait})
		s.emit(Event{Kind: EvWait, Phase: p.n.ID, Files: m.Wait, Detail: detail})
	}
}

func joinDetail(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}
