package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/state"

	"github.com/claudopilot/claudopilot/ledger"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
)

// Config holds the knobs the loop itself reads.
type Config struct {
	MaxParallel           int
	KeepGoing             bool
	MaxSupervisorAttempts int
	IgnoreCheckpoints     bool
	Gate                  string // GATE_CMD, for phases without (gate: …)
	AgentCmd              string // quota is shared per command
	SupervisorCmd         string //
	TransientMaxRetries   int    // TRANSIENT_API_MAX_RETRIES
	// StuckPokes (STUCK_POKES) is how often a stuck agent is poked
	// (stopped and resumed in its session, at no attempt) before being
	// stuck counts as its attempt's failure.
	StuckPokes int
	Poll       time.Duration // how often outside state is re-read
	// Backoff gives the delay before transient retry n (1-based):
	// proc.Backoff (engine); nil retries at once.
	Backoff func(n int) time.Duration
	// FileOrder starts eligible phases in file order, as Claudopilot did,
	// instead of critical path first. For comparison in benchmarks.
	FileOrder bool
	// ExternalDone tells whether a dep outside the manifest (an issue
	// "#12" in queue mode) is done. It is asked again every Poll while a
	// phase waits on one. Nil: external deps are never done.
	ExternalDone func(id string) bool
	// ExternalWait says whether waiting on external deps may still pay
	// off (the issue queue is still working). Nil: always. When it turns
	// false, ExternalDone must already give the final answers: the loop
	// asks it before each dispatch, so that dispatch sees them.
	ExternalWait func() bool
	// Lanes are the agent CLIs to launch on, in LANES order. Empty: one
	// lane of AgentCmd/SupervisorCmd with MaxParallel slots.
	Lanes []Lane
	// Controls brings pause switches and the pacer's slots into the loop;
	// nil: neither changes during the run.
	Controls <-chan Control
	// Paused starts the run paused (the switch persists across restarts).
	Paused bool
	// Review is the independent review gate (off unless REVIEW_CMD).
	Review ReviewConfig
	// MergeBatch caps a merge train (MERGE_BATCH): with a SpecMerger,
	// the done phases waiting to land (up to this many, with the same
	// gate) land together as one first-parent commit (spec.go). 0 or 1:
	// one phase per commit.
	MergeBatch int
	// GateSlots is GATE_SLOTS: with a SpecMerger, how many merge gates
	// run at once, each on top of those ahead of it (spec.go).
	GateSlots int
	// TrainWait is TRAIN_WAIT_SECONDS: how long a train that would land
	// short waits for phases whose agents have ended (and, taking the
	// last gate slot, for those whose agents run).
	TrainWait time.Duration
	// BranchGate keeps the gate in a phase's worktree even when the merge
	// owner gates speculatively (which proves the same on the tree that
	// lands); for comparison in benchmarks.
	BranchGate bool
	// Stack lets a phase start on its one unmerged dep's gated tip before
	// that dep lands (STACK=1; stack.go).
	Stack bool
	// RunMaxCost stops new launches once this run's agents reported
	// spending this many dollars (RUN_MAX_COST_USD; 0: no limit).
	RunMaxCost float64
	// PhaseMaxCost parks a phase that spent this many dollars over all
	// its attempts (PHASE_MAX_COST_USD; 0: no limit).
	PhaseMaxCost float64
	// PhaseMaxTokens and PhaseMaxSessions park a phase that used this
	// many tokens, or started this many agent processes, over its whole
	// life: every attempt, role, reviewer and run (PHASE_MAX_TOKENS,
	// PHASE_MAX_SESSIONS; 0: no limit).
	PhaseMaxTokens, PhaseMaxSessions int64
	// NeedsInputWait is how long a question waits for an answer before
	// its phase parks (NEEDS_INPUT_HOURS; 0: DefaultNeedsInputWait).
	NeedsInputWait time.Duration
	// Answers are the answers already given when the driver starts (the
	// switches' file), taken before any question's deadline is checked:
	// one given while no driver ran still counts after its deadline.
	Answers map[string]Answer
	// GateState, when set, hears whether the base's gate is red: true
	// after a merge gate fails, false after a merge lands. The pacer caps
	// every lane at 1 while it is red. Called from the loop: it must not
	// block.
	GateState func(red bool)
	// Side lends lane slots to agent runs outside the graph (scanners;
	// side.go); nil: none.
	Side *Side
}

// Store writes phase states to the live manifest. Every write re-reads the
// file and changes one token, so concurrent human edits survive.
type Store interface {
	SetState(id string, s manifest.State) error
	Read() (*manifest.Manifest, error)
	// Source is the manifest's bytes as they are now, for edits made
	// while the run goes on (a human's, possibly invalid).
	Source() ([]byte, error)
}

// Scheduler owns all run state. Only its loop goroutine changes it; workers,
// the merger and timers report over channels.
type Scheduler struct {
	cfg    Config
	rm     *roadmap.Roadmap
	store  Store
	runner Runner
	merger Merger
	jn     *state.Journal
	events chan<- Event
	now    func() time.Time

	phases  []*phase // by roadmap index
	byID    map[string]*phase
	edits   <-chan []byte
	results chan Outcome
	// stages carries what attempts and merges say as they go (a gate
	// starting) from their goroutines into the loop, which emits it.
	stages   chan Event
	merged   chan MergeOutcome
	woken    chan string   // a waiting merge's watch saw a change (phase id)
	arrivals chan string   // an attempt's agent ended: the phase may be done in moments
	done     chan struct{} // closed when Run returns
	mergeQ   []*phase      // done phases waiting for the merge owner, in order
	merging  *phase        // the phase the merge owner holds, if any (one at a time)
	spec     specState     // the speculation, with a SpecMerger (spec.go)
	cooldown map[string]time.Time
	// unwritten holds states the manifest could not take because it did
	// not parse at the time; they are written when it does again.
	unwritten map[string]manifest.State
	// editLater is set when an edit arrived while a merge moved the base
	// checkout and caught the merged phase's doc mid-rename; onMerge
	// applies it.
	editLater bool
	halt      *HaltError
	fatal     error
	started   time.Time
	running   int // agents running now
	lanes     []*laneSlot
	paused    bool         // no new launches; running agents go on
	spend     ledger.Usage // this run's agents' reported spend
	budgetHit bool         // RunMaxCost reached: no new launches
	draining  bool         // asked to finish what runs, then end with success
	rev       reviewGate
	side      sideState     // side runs' requests and slots (side.go)
	pred      predictState  // conflict prediction (SetPredictor)
	out       outsideState  // nodes from a Source (SetSource)
	group     *outcomeGroup // events held for one fsync (durable.go)

	// outsideMayPay is cfg.ExternalWait's answer as of the last dispatch:
	// asked before it, so a queue that ends between the dispatch and the
	// idle check is seen only once its last answers were dispatched on.
	outsideMayPay bool
}

// phase is the loop's view of one phase.
type phase struct {
	n         *roadmap.Node
	state     manifest.State
	busy      bool // an attempt is in flight
	job       Job  // the attempt in flight, to run again after a cooldown
	next      *Job // the attempt to start when a slot and the clock allow
	notBefore time.Time

	workerRuns int // attempts started per role (numbers the logs)
	superRuns  int
	superSpent int // supervisor attempts that count against the limit
	transient  int
	pokes      int  // stuck outcomes poked since the last success (STUCK_POKES)
	poked      bool // a poke by hand stopped the running worker: it is resumed, at no attempt
	attempting bool // an agent attempt (not a merge or a review) is in flight
	reason     state.Reason
	detail     string
	logPath    string
	tip        string
	waitsOn    string
	retry      bool
	// owed is the attempt a [pending] phase starts with instead of a
	// first worker: what the run that left it mid-way (a drain) owed it.
	owed     *Job
	takeBase bool // its next attempt merges the base in first (predict.go)
	// stop cancels the attempt in flight; stopping is set once unstack
	// used it, fresh when the next start sets the branch aside (stack.go).
	stop     context.CancelFunc
	stopping bool
	fresh    bool
	// away: the source withdrew this outside node while its agent ran
	// (why); it is dropped when the agent is back (awayOutcome).
	away string
	// stackTip is the dep's tip it was stacked on; verify, once the dep
	// landed from another tip, is that tip, to check (Job.StackedOn).
	stackTip, verify string
	// waiting is what the phase's merge waits for, as last told (so a
	// wait that goes on is told once); waitRounds counts its retries.
	waiting    string
	waitRounds int
	// queuedAt is when it last joined the merge queue; finishing is set
	// while its attempt's checks run after the agent ended; solo: its
	// build conflicted with a car ahead, so it is built alone on the base
	// (spec.go).
	queuedAt  time.Time
	finishing bool
	solo      bool

	started time.Time
	spent   time.Duration
	lane    *laneSlot // the lane of the attempt in flight, or of the last one
	// landing is set while an outside node's Source lands it; checks are
	// the failing checks its repair is told of.
	landing bool
	checks  []string
	// runsBefore and spentBefore are what earlier runs did (from the
	// journal): the summary counts this run's attempts and time only.
	runsBefore  int
	spentBefore time.Duration
	// ask is the question its agent asked, while it waits on an answer
	// (ask.go).
	ask *asked
	// noDone: its last attempt that told ended without the DONE_ doc
	// (HaltError.NoDone).
	noDone bool
	usage  ledger.Usage                // over every run, for the phase caps (budget.go)
	run    ledger.Usage                // this run's
	byRole map[state.Role]ledger.Usage // this run's, by role
}

// New makes a scheduler for a validated roadmap. The journal may be nil
// (no crash recovery); events may be nil (no progress output).
func New(cfg Config, rm *roadmap.Roadmap, store Store, runner Runner, merger Merger, jn *state.Journal, events chan<- Event) *Scheduler {
	if cfg.MaxParallel < 1 {
		cfg.MaxParallel = 1
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 5 * time.Second
	}
	if cfg.NeedsInputWait <= 0 {
		cfg.NeedsInputWait = DefaultNeedsInputWait
	}
	if cfg.Backoff == nil {
		// The rule's one home is proc.Backoff, which engine passes; the
		// loop alone (its tests) retries at once.
		cfg.Backoff = func(int) time.Duration { return 0 }
	}
	s := &Scheduler{
		cfg: cfg, rm: rm, store: store, runner: runner, merger: merger, jn: jn, events: events,
		now:       time.Now,
		byID:      make(map[string]*phase, len(rm.Nodes)),
		results:   make(chan Outcome),
		merged:    make(chan MergeOutcome),
		woken:     make(chan string),
		arrivals:  make(chan string),
		done:      make(chan struct{}),
		cooldown:  make(map[string]time.Time),
		unwritten: make(map[string]manifest.State),
		lanes:     newLanes(cfg),
		paused:    cfg.Paused,
	}
	s.rev.results = make(chan ReviewOutcome)
	if sm, ok := merger.(SpecMerger); ok {
		s.spec.m, s.spec.results = sm, make(chan specResult)
	}
	s.stages = make(chan Event, 64)
	for _, n := range rm.Nodes {
		p := &phase{n: n, state: n.State}
		s.phases = append(s.phases, p)
		s.byID[n.ID] = p
	}
	return s
}

// Run drives the roadmap until everything that can be merged is, then
// returns the summary and an error that says how it ended (nil: all merged).
func (s *Scheduler) Run(ctx context.Context) (Summary, error) {
	defer close(s.done)
	defer s.cfg.Side.end()
	s.started = s.now()
	if err := s.restore(); err != nil {
		return s.summary(), err
	}
	s.announce()
	s.onAnswers(s.cfg.Answers) // before the first pass checks deadlines
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for ctx.Err() == nil {
		s.outsideMayPay = s.cfg.ExternalWait == nil || s.cfg.ExternalWait()
		// One reading of the clock per pass: what dispatch found not yet
		// due, idle and arm wait for. Read again, a backoff ending in
		// between was neither started nor waited for (an hour's sleep).
		now := s.now()
		if s.fatal == nil {
			s.dispatch(runCtx, now)
			s.dispatchSide(now) // what the phases left
			s.maybePredict(runCtx)
		}
		if s.idle(now) {
			return s.finish()
		}
		s.arm(timer, now)
		if !s.wait(ctx, timer) {
			break
		}
	}
	// Interrupted. Stop launching; cancelling runCtx stops every agent's
	// process group (SIGTERM, SIGKILL after the grace). Keep collecting
	// results until all are back.
	cancel()
	s.drain()
	s.emit(Event{Kind: EvEnd, Detail: "interrupted"})
	return s.summary(), ErrInterrupted
}

// announce journals the rules this run decides eligibility by, for
// `explain` (a run's flags are seen nowhere else), and says the run
// started, paused or not.
func (s *Scheduler) announce() {
	rules := state.Rules{KeepGoing: s.cfg.KeepGoing, IgnoreCheckpoints: s.cfg.IgnoreCheckpoints}
	for _, l := range s.lanes {
		rules.Lanes = append(rules.Lanes, state.RuleLane{ID: l.ID, Cmd: l.Cmd, SupervisorCmd: l.SupervisorCmd, Fallback: l.Fallback, Slots: l.Slots, Account: l.Account})
		rules.Slots += l.Slots
	}
	s.record(state.Record{Event: "run", Rules: &rules})
	s.emit(Event{Kind: EvStart, Detail: fmt.Sprintf("%d phases, %s", len(s.phases), s.slotsText())})
	if s.paused {
		s.record(state.Record{Event: EvPaused})
		s.emit(Event{Kind: EvPaused, Detail: "started paused: no launches until `claudopilot resume`"})
	}
}

// wait handles the next thing that happens: a result, a merge, an edit, a
// control, the timer. False when ctx is done (the run is interrupted).
func (s *Scheduler) wait(ctx context.Context, timer *time.Timer) bool {
	// A result that arrives after the interrupt (ctx.Err() != nil) was
	// stopped by it: that is no failure of the phase.
	select {
	case o := <-s.results:
		if ctx.Err() != nil {
			s.interruptedOutcome(o)
		} else {
			s.onOutcome(o)
		}
	case m := <-s.merged:
		if ctx.Err() != nil {
			s.mergedAfterInterrupt(m)
		} else {
			s.onMerge(m)
		}
	case cs := <-s.pred.results:
		s.onPredicted(cs)
	case r := <-s.spec.results:
		if ctx.Err() != nil {
			s.specAfterInterrupt(r)
		} else {
			s.onSpec(r)
		}
	case id := <-s.arrivals:
		if p := s.byID[id]; p != nil && p.busy {
			p.finishing = true
		}
	case e := <-s.stages:
		s.stage(e)
	case ro := <-s.rev.results:
		if ctx.Err() != nil {
			s.rev.running--
			s.byID[ro.ID].busy = false
		} else {
			s.onReview(ro)
		}
	case ns, ok := <-s.out.offers:
		if !ok {
			s.out.offers = nil
		} else {
			s.onOffers(ns)
		}
	case m := <-s.out.landed:
		if ctx.Err() != nil {
			s.landedAfterInterrupt(m)
		} else {
			s.onLanded(m)
		}
	case src, ok := <-s.edits:
		if !ok {
			s.edits = nil
		} else {
			s.onEdit(src)
		}
	case id := <-s.woken:
		s.onWoken(id)
	case c := <-s.cfg.Controls:
		s.onControl(c)
	case m := <-s.sideMsgs():
		s.onSide(m)
	case <-timer.C:
	case <-ctx.Done():
		return false
	}
	return true
}

// onWoken: what a waiting merge waits on changed: try it now.
func (s *Scheduler) onWoken(id string) {
	if p := s.byID[id]; p.waiting != "" && s.merging != p {
		p.notBefore = time.Time{}
	}
	if s.spec.waitFor == id {
		s.spec.retryAt = time.Time{}
	}
}

// stage tells what an attempt or a merge reached as it goes; a gate's
// start is journaled too, so a timeline drawn from the journal marks it.
func (s *Scheduler) stage(e Event) {
	if e.Kind == EvGate {
		s.record(state.Record{Time: e.Time, Phase: e.Phase, Event: "gate", Role: e.Role, Attempt: e.Attempt, Detail: e.Detail, Lane: e.Lane})
	}
	s.emit(e)
}

// interruptedOutcome books an attempt that ended because of an interrupt.
func (s *Scheduler) interruptedOutcome(o Outcome) {
	s.warnOutcome(o)
	p := s.byID[o.ID]
	s.release(p)
	p.spent += o.Ended.Sub(o.Started)
	s.book(p, o) // spent is spent, and its sessions count (PHASE_MAX_SESSIONS)
	s.record(state.Record{Phase: o.ID, Event: "interrupted", Role: o.Role, Attempt: o.Attempt})
	s.emit(Event{Kind: EvExit, Phase: o.ID, Role: o.Role, Attempt: o.Attempt, Detail: "interrupted", LogPath: o.LogPath})
}

// warnOutcome emits the attempt's warnings.
func (s *Scheduler) warnOutcome(o Outcome) {
	for _, w := range o.Warnings {
		s.emit(Event{Kind: EvWarn, Phase: o.ID, Role: o.Role, Attempt: o.Attempt, Detail: w})
	}
}

// drain waits for every in-flight attempt and merge after a cancel.
func (s *Scheduler) drain() {
	for s.running > 0 || s.merging != nil || s.out.landing > 0 || s.spec.ops > 0 {
		select {
		case m := <-s.out.landed:
			s.landedAfterInterrupt(m)
		case e := <-s.stages:
			s.stage(e)
		case o := <-s.results:
			s.interruptedOutcome(o)
		case m := <-s.merged:
			s.mergedAfterInterrupt(m)
		case r := <-s.spec.results:
			s.specAfterInterrupt(r)
		case <-s.arrivals:
		}
	}
	s.drainReviews()
}

// mergedAfterInterrupt books a merge that ended after an interrupt: landed,
// or stopped before anything moved.
func (s *Scheduler) mergedAfterInterrupt(m MergeOutcome) {
	s.merging = nil
	s.byID[m.ID].busy = false
	if m.OK {
		s.byID[m.ID].state = manifest.Merged
		s.record(state.Record{Phase: m.ID, Event: "merged", Commit: m.Commit})
	}
}

// idle is true when nothing is in flight and nothing could start.
func (s *Scheduler) idle(now time.Time) bool {
	if s.running > 0 || s.merging != nil || s.rev.running > 0 || s.out.landing > 0 || len(s.out.queue) > 0 {
		return false
	}
	if s.spec.ops > 0 || (len(s.spec.cars) > 0 && s.fatal == nil) {
		return false
	}
	if s.fatal != nil {
		return true
	}
	if s.mergeable() > 0 || s.reviewBusy() {
		return false
	}
	if s.halt != nil {
		return true
	}
	if s.asking() > 0 && !s.draining && !s.budgetHit {
		return false // waiting on the user's answer
	}
	for _, p := range s.phases {
		if p.next != nil && !s.draining && !s.budgetHit {
			return false // waiting out a cooldown or backoff
		}
	}
	if s.waitsOutside() || (s.sourceOpen() && !s.draining && !s.budgetHit) {
		// The source may yet offer work (a queue still polling).
		return false
	}
	// Phases held back only by a lane (a rate limit's cooldown, a pause,
	// no slots from the pacer) are waited for.
	return !s.heldBack(now)
}

// arm sets the timer to the earliest moment something waits for.
func (s *Scheduler) arm(t *time.Timer, now time.Time) {
	var at time.Time
	// Only future moments: something whose time has come and still waits
	// is waiting for a slot, and a finishing attempt wakes the loop.
	consider := func(x time.Time) {
		if x.After(now) && (at.IsZero() || x.Before(at)) {
			at = x
		}
	}
	for _, p := range s.phases {
		if p.next != nil && s.halt == nil {
			consider(p.notBefore)
		}
	}
	for _, p := range s.mergeQ {
		if s.landsLater(p) {
			continue // its dep's landing wakes the loop
		}
		if s.specOn() {
			// A due phase joins the speculation in the dispatch that
			// made it due, or when a car's result frees room.
			consider(p.notBefore)
			continue
		}
		if s.merging == nil {
			// A merge whose moment passed while the loop worked is due
			// now: nothing else would wake the loop for it.
			at := now.Add(time.Millisecond)
			if p.notBefore.After(at) {
				at = p.notBefore
			}
			consider(at)
		} else {
			consider(p.notBefore)
		}
	}
	s.cooldownEnds(consider)
	s.askEnds(consider)
	if len(s.spec.cars) > 0 {
		consider(s.spec.retryAt)
	}
	consider(s.spec.trainAt)
	if s.pred.p != nil && s.running > 0 && !s.pred.busy {
		consider(s.pred.last.Add(s.cfg.Poll))
	}
	if s.waitsOutside() {
		consider(now.Add(s.cfg.Poll))
	}
	d := time.Hour
	if !at.IsZero() {
		d = max(at.Sub(s.now()), time.Millisecond)
	}
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	t.Reset(d)
}

// dispatch starts what may start: the next merge, pending relaunches, then
// new phases, critical path first.
func (s *Scheduler) dispatch(ctx context.Context, now time.Time) {
	s.expireAsks(now)
	s.dispatchReviews(ctx)
	s.dispatchLands(ctx)
	s.verifyStacks()
	if s.specOn() {
		if s.fatal == nil {
			s.dispatchSpec(ctx, now)
		}
	} else if s.merging == nil {
		s.dispatchMerge(ctx, now)
	}
	s.relaunch(ctx, now)
	if s.halt != nil || s.freeSlots(now) == 0 {
		return
	}
	ready, soon := s.candidates(now)
	free := s.freeSlots(now)
	if len(ready) == 0 || s.cfg.FileOrder {
		soon = nil
	}
	var rem []time.Duration
	if (len(ready) > free || len(soon) > 0) && !s.cfg.FileOrder {
		rem = s.rank(ready, soon)
	}
	s.launchNew(ctx, now, ready, soon, free, rem)
}

// dispatchMerge starts the first due merge of the queue (one at a time).
func (s *Scheduler) dispatchMerge(ctx context.Context, now time.Time) {
	s.conflictOrder()
	for i, p := range s.mergeQ {
		if p.notBefore.After(now) || s.landsLater(p) {
			continue
		}
		s.mergeQ = slices.Delete(s.mergeQ, i, i+1)
		s.startMerge(ctx, p)
		return
	}
}

// relaunch starts the due next attempts of phases already under way:
// finishing started work beats starting more, so these go first.
func (s *Scheduler) relaunch(ctx context.Context, now time.Time) {
	for _, p := range s.phases {
		if p.next == nil || p.busy || s.halt != nil || p.notBefore.After(now) {
			continue
		}
		l := s.laneFor(p, p.next.Role, now)
		if l == nil {
			continue
		}
		j := *p.next
		if s.capBeforeLaunch(p, &j) {
			continue
		}
		p.next = nil
		if p.lane != nil && l != p.lane {
			j.Session = "" // another lane's CLI cannot resume this session: start fresh
		}
		s.launch(ctx, p, j, l)
	}
}

// candidates returns the pending phases that may start now (ready) and
// those that may start once a merge under way lands (soon).
func (s *Scheduler) candidates(now time.Time) (ready, soon []*phase) {
	limit := s.checkpointLine()
	for _, p := range s.phases {
		if p.busy || p.next != nil || p.ask != nil || p.state != manifest.Pending || (limit > 0 && p.n.Line > limit) {
			continue
		}
		switch s.readiness(p, now) {
		case readyNow:
			if s.scopeFree(p) == nil {
				ready = append(ready, p)
			}
		case readyAfterMerge:
			soon = append(soon, p)
		}
	}
	return ready, soon
}

// rank sorts ready and soon by priority, then longest remaining path,
// then file order, and returns the remaining path of each node.
func (s *Scheduler) rank(ready, soon []*phase) []time.Duration {
	rem := s.rm.Remaining(func(n *roadmap.Node) manifest.State { return s.phases[n.Index].state })
	byRank := func(a, b *phase) int {
		if pa, pb := s.priority(a), s.priority(b); pa != pb {
			return pb - pa
		}
		if ra, rb := rem[a.n.Index], rem[b.n.Index]; ra != rb {
			if ra > rb {
				return -1
			}
			return 1
		}
		return a.n.Index - b.n.Index
	}
	slices.SortStableFunc(ready, byRank)
	slices.SortStableFunc(soon, byRank)
	return rem
}

// launchNew starts ready phases in rank order while slots are free. A
// phase that becomes eligible the moment a merge now under way lands
// keeps a slot for itself when it outranks what is ready now: merges take
// seconds, and handing its slot to a short branch of work costs the
// critical path a whole agent run.
func (s *Scheduler) launchNew(ctx context.Context, now time.Time, ready, soon []*phase, free int, rem []time.Duration) {
	reserved, launched := 0, 0
	for _, p := range ready {
		for len(soon) > 0 && s.outranks(soon[0], p, rem) && reserved < free {
			soon = soon[1:]
			reserved++
		}
		if launched+reserved >= free {
			break
		}
		if s.scopeFree(p) != nil {
			continue // a phase started in this round overlaps it
		}
		j := Job{Role: state.Worker, Retry: p.retry}
		if p.owed != nil {
			j = *p.owed
		}
		l := s.laneFor(p, j.Role, now)
		if l == nil {
			continue // its lane is full or cooling down
		}
		if s.capBeforeLaunch(p, &j) {
			continue
		}
		if err := s.setState(p, manifest.Running); err != nil {
			s.fatal = err
			return
		}
		p.started = now
		launched++
		s.launch(ctx, p, j, l)
		p.retry, p.owed = false, nil
	}
}

// queuedForMerge is true when q waits in the merge queue, ready to merge.
func (s *Scheduler) queuedForMerge(q *phase, now time.Time) bool {
	for _, m := range s.mergeQ {
		if m == q {
			return !q.notBefore.After(now)
		}
	}
	return false
}

type readiness int

const (
	notReady readiness = iota
	readyNow
	readyAfterMerge // every dep is merged, or its merge is under way
)

// readiness tells whether p may start now, or will as soon as the merges
// under way land. A merge waiting for a human (uncommitted files in the
// base checkout) does not count as under way.
func (s *Scheduler) readiness(p *phase, now time.Time) readiness {
	pipeline := false
	for _, d := range s.rm.Deps(p.n) {
		q := s.phases[d.Index]
		switch {
		case q.state == manifest.Merged:
		case s.mergeHeld(q) || s.queuedForMerge(q, now):
			pipeline = true
		default:
			return notReady
		}
	}
	for _, id := range p.n.External {
		if s.cfg.ExternalDone == nil || !s.cfg.ExternalDone(id) {
			return notReady
		}
	}
	if pipeline && s.stackDep(p) == nil {
		return readyAfterMerge
	}
	return readyNow
}

// scopeFree returns a phase the driver holds whose declared scope overlaps
// p's, or nil (ScopeConflict states the rule).
func (s *Scheduler) scopeFree(p *phase) *phase {
	if q := ScopeConflict(s.rm, p.n, s.held); q != nil {
		return s.phases[q.Index]
	}
	return nil
}

// held is true for a phase the driver holds: an agent or a merge runs
// for it, or it is marked running.
func (s *Scheduler) held(n *roadmap.Node) bool {
	q := s.phases[n.Index]
	return q.busy || q.state == manifest.Running
}

// view is the loop's state as Holds reads it.
func (s *Scheduler) view() View {
	return View{
		Roadmap: s.rm, State: func(n *roadmap.Node) manifest.State { return s.phases[n.Index].state },
		Held: s.held, ExternalDone: s.cfg.ExternalDone, KeepGoing: s.cfg.KeepGoing, IgnoreCheckpoints: s.cfg.IgnoreCheckpoints,
	}
}

// depsMerged is true when no dep, in the manifest or outside it, holds p.
func (s *Scheduler) depsMerged(p *phase) bool {
	return len(DepHolds(s.view(), p.n)) == 0
}

// waitsOutside is true when a pending phase waits only on deps outside the
// manifest, which may be done any time: the loop then looks again every
// Poll instead of ending.
func (s *Scheduler) waitsOutside() bool {
	if s.cfg.ExternalDone == nil || s.halt != nil || !s.outsideMayPay {
		return false
	}
	for _, p := range s.phases {
		if p.state != manifest.Pending || len(p.n.External) == 0 {
			continue
		}
		inside := true
		for _, d := range s.rm.Deps(p.n) {
			if q := s.phases[d.Index]; q.state != manifest.Merged && q.state != manifest.Pending && q.state != manifest.Running {
				inside = false // waits on something parked: never
			}
		}
		if inside {
			return true
		}
	}
	return false
}

// checkpointLine returns the line of the first LOOP-CHECKPOINT marker that
// is in force, or 0 (CheckpointLine states the rule).
func (s *Scheduler) checkpointLine() int {
	return CheckpointLine(s.rm, s.cfg.KeepGoing, s.cfg.IgnoreCheckpoints)
}

// launch starts one attempt on lane l in its own goroutine.
func (s *Scheduler) launch(ctx context.Context, p *phase, j Job, l *laneSlot) {
	j.TakeBase = j.TakeBase || s.takesBase(p)
	s.stackOn(p, &j)
	j.ID, j.Title, j.Doc, j.Owns = p.n.ID, p.n.Title, p.n.Doc, p.n.Owns
	j.Lane, j.Cmd, j.Account, j.Attach = l.ID, l.cmdOf(j.Role), l.Account, l.Attach
	j.ResumeCmd = l.ResumeCmd
	p.lane = l
	l.running++
	j.Gate = s.gateOf(p)
	j.Gating = func() {
		s.stages <- Event{Time: s.now(), Kind: EvGate, Phase: j.ID, Role: j.Role, Attempt: j.Attempt, Lane: j.Lane}
	}
	id, done := j.ID, s.done
	j.Finishing = func() {
		select {
		case s.arrivals <- id:
		case <-done:
		}
	}
	// The merge owner gates the merge on top of the base, which proves
	// what the branch's own gate would, on the tree that lands.
	j.NoGate = s.specOn() && !p.n.Outside && !s.cfg.BranchGate
	p.finishing, p.solo = false, false
	if j.Role == state.Supervisor {
		p.superRuns++
		j.Attempt = p.superRuns
		if j.Mode == "" {
			j.Mode = "standard"
			if p.superSpent+1 >= s.cfg.MaxSupervisorAttempts {
				j.Mode = "best-effort"
			}
		}
		// Spent when it starts, not when it fails: a supervisor whose
		// fix passes the branch gate but not the merge's must still use
		// up its attempt, or the two would take turns forever.
		p.superSpent++
	} else {
		p.workerRuns++
		j.Attempt = p.workerRuns
	}
	s.outsideJob(p, &j)
	p.busy, p.attempting = true, true
	p.job = j
	s.running++
	s.record(state.Record{Phase: p.n.ID, Event: "launch", Role: j.Role, Attempt: j.Attempt, Lane: j.Lane})
	s.emit(Event{Kind: EvLaunch, Phase: p.n.ID, State: string(p.state), Role: j.Role, Attempt: j.Attempt, Lane: j.Lane})
	ctx, p.stop = context.WithCancel(ctx)
	stop := p.stop
	go func() {
		defer stop()
		o := s.runner.Run(ctx, j, func(pgid int) {
			// Written from the worker goroutine: the journal is an
			// append-only file with its own lock, not loop state.
			s.recordNow(state.Record{Phase: j.ID, Event: "pgid", Role: j.Role, Attempt: j.Attempt, PGID: pgid})
		})
		o.ID, o.Role, o.Attempt = j.ID, j.Role, j.Attempt
		s.results <- o
	}()
}

func (s *Scheduler) gateOf(p *phase) string {
	if p.n.Gate != "" {
		return p.n.Gate
	}
	return s.cfg.Gate
}

func (s *Scheduler) startMerge(ctx context.Context, p *phase) {
	s.merging = p
	p.busy = true
	complete := true
	for _, q := range s.phases {
		if q != p && !q.n.Outside && q.state != manifest.Merged {
			complete = false
			break
		}
	}
	j := MergeJob{ID: p.n.ID, Title: p.n.Title, Owns: p.n.Owns, Tip: p.tip, Gate: s.gateOf(p), Complete: complete}
	j.Gating = func() { s.stages <- Event{Time: s.now(), Kind: EvGate, Phase: j.ID, Detail: "merge"} }
	j.ReviewHead, j.ReviewBase = s.reviewed(p)
	s.emit(Event{Kind: EvMerging, Phase: p.n.ID})
	go func() {
		// An interrupt cancels ctx: the merger stops its gate, and never
		// cuts off the ref move or the checkout move it has begun.
		s.merged <- s.merger.Merge(ctx, j)
	}()
}

// onOutcome handles the end of one attempt.
func (s *Scheduler) onOutcome(o Outcome) {
	s.warnOutcome(o)
	p := s.byID[o.ID]
	s.release(p)
	poked := p.poked
	p.poked = false
	p.spent += o.Ended.Sub(o.Started)
	if s.stoppedOutcome(p, o) || s.awayOutcome(p, o) {
		return
	}
	ev := Event{Kind: EvExit, Phase: o.ID, Role: o.Role, Attempt: o.Attempt, Reason: o.Reason, Detail: o.Detail, LogPath: o.LogPath}
	if o.Usage.Known() {
		u := o.Usage
		ev.Usage = &u
	}
	s.emit(ev)
	if o.Away {
		// Claimed by someone else, or closed: not ours to work on.
		s.drop(p, o.Detail)
		return
	}
	overBudget := s.book(p, o)
	if o.Reason == state.ReasonBudget && o.Found {
		// A resumed phase over a cap whose branch was not done: the
		// runner started no agent (Job.Capped).
		p.unlaunch(o.Role)
		overBudget = true
	}
	if overBudget && !o.OK {
		s.overBudget(p, o)
		return
	}
	if o.Question != "" && !o.OK {
		s.needsInput(p, o)
		return
	}
	if o.OK {
		s.onDone(p, o)
		return
	}
	if s.relaunched(p, o, poked) {
		return
	}
	p.transient = 0
	if o.LogPath != "" {
		p.logPath = o.LogPath
	}
	p.noDone = noDoneAfter(p.noDone, o)
	if r := workerReport(p, o); r != state.ReasonNone {
		// The worker's own report (Claudopilot's exit codes): no
		// supervisor is sent; the phase stops here.
		s.record(state.Record{Phase: o.ID, Event: "fail", Role: o.Role, Attempt: o.Attempt, Reason: r, Detail: o.Detail, Log: o.LogPath})
		s.giveUp(p, r, o.Detail)
		return
	}
	by := o.Role
	if o.Found {
		// Recovery found the phase stopped mid-way (an unfinished merge
		// of the base): no agent ran, so it is no attempt, and the
		// supervisor takes it whoever was launched.
		p.unlaunch(o.Role)
		by = ""
	}
	s.record(state.Record{Phase: o.ID, Event: "fail", Role: o.Role, Attempt: o.Attempt, Reason: o.Reason, Detail: o.Detail, Log: o.LogPath, Found: o.Found})
	s.failed(p, by, o.Reason, o.Detail, o.LogPath)
}

// onDone takes a passing attempt (its branch done and gated) to the
// landing, or to the review gate first.
func (s *Scheduler) onDone(p *phase, o Outcome) {
	p.logPath = o.LogPath
	p.tip = o.Tip
	p.transient, p.pokes = 0, 0
	p.noDone = false
	detail := ""
	if o.Found {
		// Found done, no agent ran: the launch gives its attempt back.
		p.unlaunch(o.Role)
		detail = foundDone
	}
	s.record(state.Record{Phase: o.ID, Event: "done", Role: o.Role, Attempt: o.Attempt, Tip: o.Tip, Detail: detail})
	s.landOrReview(p)
}

// relaunched runs a failed attempt again at no attempt when it was not
// its agent's doing: a poke by hand, a usage limit (the breaker), a
// passing API error, a stuck agent poked (STUCK_POKES). A worker carries
// on in its session.
func (s *Scheduler) relaunched(p *phase, o Outcome, poked bool) bool {
	switch {
	case poked:
		s.poke(p, o, true)
	case o.Cooldown > 0:
		s.tripBreaker(p, o)
	case o.Transient && p.transient < s.cfg.TransientMaxRetries:
		p.transient++
		until := s.now().Add(s.cfg.Backoff(p.transient))
		s.requeue(p, o, until)
		p.next.Session = o.Usage.SessionID // carry on in its session (AGENT_RESUME_CMD)
		s.record(state.Record{Phase: o.ID, Event: "transient", Role: o.Role, Attempt: o.Attempt, Until: until})
		s.emit(Event{Kind: EvRetry, Phase: o.ID, Role: o.Role, Until: until, Detail: o.Detail})
	case o.Reason == state.ReasonStuck && p.pokes < s.cfg.StuckPokes:
		s.poke(p, o, false)
	default:
		return false
	}
	return true
}

// poke relaunches a stuck agent at once in its own session (Claudopilot's
// poke: stopped and resumed), at no attempt; after STUCK_POKES pokes in a
// row, stuck is the attempt's failure.
// A poke by hand (byHand: .claudopilot/control/<id>.poke) counts against
// no limit, as Claudopilot's did not.
func (s *Scheduler) poke(p *phase, o Outcome, byHand bool) {
	s.requeue(p, o, time.Time{})
	p.next.Session = o.Usage.SessionID
	detail := "poked by hand: resumed"
	if !byHand {
		p.pokes++
		detail = fmt.Sprintf("%s: poked (%d of %d): resumed", o.Detail, p.pokes, s.cfg.StuckPokes)
	}
	s.record(state.Record{Phase: o.ID, Event: "poke", Role: o.Role, Attempt: o.Attempt, Detail: detail})
	s.emit(Event{Kind: EvRetry, Phase: o.ID, Role: o.Role, Detail: detail})
}

// pokeRunning stops the running worker of phase id for a poke by hand;
// anything else (no such phase, nothing running, a supervisor or a
// reviewer) is left alone, with a note.
func (s *Scheduler) pokeRunning(id string) {
	p := s.byID[id]
	if p == nil || !p.attempting || p.job.Role != state.Worker || p.stopping || p.poked {
		s.emit(Event{Kind: EvWarn, Phase: id, Detail: "poke ignored: no worker of " + id + " is running"})
		return
	}
	p.poked = true
	p.stop()
}

// requeue schedules the same attempt again later without spending it.
func (s *Scheduler) requeue(p *phase, o Outcome, at time.Time) {
	// The same job again, failure context and all; it reuses the attempt
	// number.
	j := p.job
	if o.Role == state.Supervisor {
		p.superRuns--
		p.superSpent--
	} else {
		p.workerRuns--
	}
	j.Mode, j.Fresh = "", false
	p.next = &j
	p.notBefore = at
}

// failed routes a failure while supervisor attempts remain: a failed
// worker (or merge) gets the supervisor; a supervisor that did not make the
// phase done and green hands back to the worker, in the same worktree. Once
// attempts run out the run halts, or parks the phase.
func (s *Scheduler) failed(p *phase, by state.Role, r state.Reason, detail, log string) {
	p.reason, p.detail = r, detail
	if log != "" {
		p.logPath = log
	}
	if s.halt == nil && p.superSpent < s.cfg.MaxSupervisorAttempts {
		if by == state.Supervisor {
			p.next = &Job{Role: state.Worker}
		} else {
			p.next = &Job{Role: state.Supervisor, Failure: r, FailureLog: p.logPath, Detail: detail}
		}
		p.notBefore = time.Time{}
		return
	}
	s.giveUp(p, r, detail)
}

// park blocks a phase (keep-going) and every phase that waits on it.
func (s *Scheduler) park(p *phase) {
	if err := s.setState(p, manifest.Blocked); err != nil {
		s.fatal = err
		return
	}
	s.record(state.Record{Phase: p.n.ID, Event: "blocked", Reason: p.reason})
	s.emit(Event{Kind: EvBlocked, Phase: p.n.ID, State: string(manifest.Blocked), Reason: p.reason, Detail: p.detail, LogPath: p.logPath})
	queue := []*roadmap.Node{p.n}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, d := range s.rm.Dependents(n) {
			q := s.phases[d.Index]
			if q.state != manifest.Pending || q.busy || q.next != nil {
				continue
			}
			if err := s.setState(q, manifest.Blocked); err != nil {
				s.fatal = err
				return
			}
			q.waitsOn = p.n.ID
			s.record(state.Record{Phase: q.n.ID, Event: "blocked", WaitsOn: p.n.ID})
			s.emit(Event{Kind: EvBlocked, Phase: q.n.ID, State: string(manifest.Blocked), Detail: "waits on " + p.n.ID})
			queue = append(queue, d)
		}
	}
}

// WaitDetail says what a merge waits for and what the user can do.
func WaitDetail(files []string, waiting string) string {
	if len(files) == 0 {
		return "waiting: " + waiting
	}
	d := "waiting: uncommitted changes in the base checkout to " + strings.Join(files, ", ") +
		", which the merge also changes: commit, stash or revert them there and the merge goes on"
	if waiting != "" {
		d += "; " + waiting
	}
	return d
}

// watchWait tries the merge of phase id again as soon as changed is
// closed (what it waits on may have changed).
func (s *Scheduler) watchWait(id string, changed <-chan struct{}) {
	go func(done <-chan struct{}) {
		select {
		case <-changed:
			select {
			case s.woken <- id:
			case <-done:
			}
		case <-done:
		}
	}(s.done)
}

// onMerge handles the merge owner's report.
func (s *Scheduler) onMerge(m MergeOutcome) {
	p := s.byID[m.ID]
	s.merging = nil
	if s.editLater {
		// An edit saved while the checkout moved: apply it now that the
		// folder is whole again, after this outcome is booked.
		s.editLater = false
		defer s.onEdit(nil)
	}
	p.busy = false
	if m.Flaky != "" {
		// Red, then green on a rerun (GATE_RETRIES): journaled, so a
		// flaky suite shows.
		s.record(state.Record{Phase: m.ID, Event: "flaky", Detail: m.Flaky})
		s.emit(Event{Kind: EvWarn, Phase: m.ID, Detail: m.Flaky})
	}
	switch {
	case m.OK:
		// The merger wrote [merged] into the commit and the live file.
		p.state = manifest.Merged
		p.reason, p.detail = "", ""
		p.waiting, p.waitRounds = "", 0
		s.gateState(false)
		s.record(state.Record{Phase: m.ID, Event: "merged", Commit: m.Commit})
		s.landed(m.ID)
		s.durable()
		s.emit(Event{Kind: EvMerged, Phase: m.ID, State: string(manifest.Merged), Detail: m.Commit})
		if m.Detail != "" {
			s.emit(Event{Kind: EvWarn, Phase: m.ID, Detail: m.Detail})
		}
	case len(m.Wait) > 0 || m.Waiting != "":
		// Waiting is never a failure: the merge is tried again, first in
		// the queue, until what it waits for is gone.
		p.waitRounds++
		delay := s.cfg.Poll
		if len(m.Wait) == 0 {
			// A base that keeps moving, a lock: back off, up to a
			// minute between tries.
			delay = min(s.cfg.Poll*time.Duration(min(p.waitRounds, 12)), time.Minute)
		}
		p.notBefore = s.now().Add(delay)
		s.mergeQ = append([]*phase{p}, s.mergeQ...)
		if m.Changed != nil {
			s.watchWait(m.ID, m.Changed)
		}
		detail := WaitDetail(m.Wait, m.Waiting)
		if detail != p.waiting {
			p.waiting = detail
			s.record(state.Record{Phase: m.ID, Event: "wait", Detail: detail, Files: m.Wait})
			s.emit(Event{Kind: EvWait, Phase: m.ID, Files: m.Wait, Detail: detail})
		}
	case m.Err != nil:
		s.fatal = fmt.Errorf("merge %s: %w", m.ID, m.Err)
	case m.Stale:
		s.reviewStale(p, m.Detail)
	default:
		p.waiting, p.waitRounds = "", 0
		if m.Reason == state.ReasonGate {
			s.gateState(true)
		}
		s.record(state.Record{Phase: m.ID, Event: "fail", Reason: m.Reason, Detail: m.Detail, Log: m.LogPath})
		s.emit(Event{Kind: EvExit, Phase: m.ID, Reason: m.Reason, Detail: m.Detail, LogPath: m.LogPath})
		s.failed(p, "", m.Reason, m.Detail, m.LogPath)
	}
}

func (s *Scheduler) setState(p *phase, st manifest.State) error {
	if p.state == st {
		return nil
	}
	if p.n.Outside {
		// Its state is kept by its source (labels), off the loop.
		p.state = st
		s.out.src.Record(p.n.ID, st, Note{Reason: p.reason, Detail: p.detail, LogPath: p.logPath})
		return nil
	}
	if err := s.store.SetState(p.n.ID, st); err != nil {
		if !notNow(err) {
			return fmt.Errorf("write state of %s: %w", p.n.ID, err)
		}
		// The file does not parse right now (a human is half-way
		// through an edit). The run goes on; the state is written once
		// the file is valid again.
		if len(s.unwritten) == 0 {
			s.emit(Event{Kind: EvWarn, Phase: p.n.ID, Detail: "cannot write the manifest now, will retry: " + err.Error()})
		}
		s.unwritten[p.n.ID] = st
	} else {
		delete(s.unwritten, p.n.ID)
	}
	p.state = st
	if st == manifest.Blocked || st == manifest.Failed {
		s.unstack(p) // what was stacked on it stops
	}
	return nil
}

// flushStates writes the states the manifest could not take earlier.
func (s *Scheduler) flushStates() {
	for id, st := range s.unwritten {
		if p := s.byID[id]; p == nil || p.state != st {
			delete(s.unwritten, id)
			continue
		}
		if err := s.store.SetState(id, st); err == nil || !notNow(err) {
			delete(s.unwritten, id)
		}
	}
}

// notNow is true for a write the manifest cannot take at the moment: it
// does not parse, or lacks the phase, as a file half-way through an
// editor's save does (truncated, then written), or another process holds
// it open for writing. The write is kept for later rather than ending the
// run.
func notNow(err error) bool {
	var unparsable manifest.ErrorList
	return errors.As(err, &unparsable) || errors.Is(err, manifest.ErrUnknownPhase) || errors.Is(err, roadmap.ErrBusy)
}

func (s *Scheduler) emit(e Event) {
	if e.Kind == EvEnd {
		s.syncJournal() // the run's last records are on disk before its end is told
	}
	if s.events == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = s.now()
	}
	if s.group != nil {
		s.group.events = append(s.group.events, e)
		return
	}
	s.events <- e
}

func (s *Scheduler) record(r state.Record) {
	if s.jn == nil {
		return
	}
	if err := s.jn.Write(r); err != nil {
		// A journal that cannot be written loses crash recovery, not
		// work: say so and carry on.
		s.emit(Event{Kind: EvWarn, Phase: r.Phase, Detail: "journal: " + err.Error()})
	}
}

// finish decides how the run ended. Parked phases are counted from the
// manifest on disk, not from this process's memory.
func (s *Scheduler) finish() (Summary, error) {
	if s.draining && s.halt == nil && s.fatal == nil {
		s.pendAfterDrain()
	}
	s.flushStates()
	if len(s.unwritten) > 0 && s.fatal == nil {
		s.fatal = fmt.Errorf("the manifest %s does not parse, so the final states could not be written: fix it and run again", s.rm.ManifestPath)
	}
	sum := s.summary()
	if s.fatal != nil {
		s.emit(Event{Kind: EvEnd, Detail: s.fatal.Error()})
		return sum, s.fatal
	}
	m, err := s.store.Read()
	if err != nil {
		err = fmt.Errorf("read manifest: %w", err)
		s.emit(Event{Kind: EvEnd, Detail: err.Error()})
		return sum, err
	}
	var blocked, unmerged int
	for _, ph := range m.Phases {
		switch ph.State {
		case manifest.Blocked:
			blocked++
		case manifest.Merged:
		default:
			unmerged++
		}
	}
	switch {
	case s.halt != nil:
		for _, p := range s.phases {
			if p.next != nil && p.state == manifest.Running {
				// Its repair was not started because of the halt.
				if err := s.setState(p, manifest.Failed); err == nil {
					s.record(state.Record{Phase: p.n.ID, Event: "failed", Reason: p.reason})
				}
				p.next = nil
			}
		}
		s.emit(Event{Kind: EvEnd, Detail: s.halt.Error()})
		return sum, s.halt
	case s.draining && s.halt == nil:
		merged, not := len(m.Phases)-unmerged-blocked, unmerged+blocked
		for _, p := range s.phases {
			// The issues of a queue count too (their states are the loop's).
			if p.n.Outside && p.state == manifest.Merged {
				merged++
			} else if p.n.Outside {
				not++
			}
		}
		s.emit(Event{Kind: EvEnd, Detail: fmt.Sprintf("drained: %d merged, %d not merged", merged, not)})
		return sum, nil
	case s.budgetHit && unmerged+blocked > 0:
		s.emit(Event{Kind: EvEnd, Detail: "run budget reached"})
		return sum, fmt.Errorf("%w: %s of $%.2f (RUN_MAX_COST_USD); %d phases not merged", ErrBudget, ledger.CostText(s.spend), s.cfg.RunMaxCost, unmerged+blocked)
	case blocked > 0:
		s.emit(Event{Kind: EvEnd, Detail: fmt.Sprintf("%d blocked", blocked)})
		return sum, ErrParked
	case unmerged == 0:
		s.emit(Event{Kind: EvEnd, Detail: "all merged"})
		return sum, nil
	case s.checkpointLine() > 0:
		s.emit(Event{Kind: EvEnd, Detail: "stopped at LOOP-CHECKPOINT"})
		return sum, fmt.Errorf("%w at line %d (remove the marker to go on)", ErrCheckpoint, s.checkpointLine())
	}
	s.emit(Event{Kind: EvEnd, Detail: "nothing can progress"})
	return sum, fmt.Errorf("%w: %s", ErrNoProgress, s.stuckReason())
}

// pendAfterDrain gives back, at the end of a drain, every phase the run
// held without an attempt in flight (a red one owed its repair, one
// waiting out a cooldown, one never resumed): [pending], not [running],
// since no driver holds it now. The journal keeps what it is owed, and the
// next run starts it with that (restore). A phase stacked on a dep that
// has not landed stays [running]: a restart treats it as stacked.
func (s *Scheduler) pendAfterDrain() {
	for _, p := range s.phases {
		if p.n.Outside || p.state != manifest.Running || p.busy || !s.depsMerged(p) {
			continue
		}
		if err := s.setState(p, manifest.Pending); err != nil {
			s.emit(Event{Kind: EvWarn, Phase: p.n.ID, Detail: err.Error()})
		}
	}
}

// stuckReason names what holds the remaining phases.
func (s *Scheduler) stuckReason() string {
	var held, outside []string
	for _, p := range s.phases {
		if p.state == manifest.Failed || p.state == manifest.Running {
			held = append(held, fmt.Sprintf("%s is [%s]", p.n.ID, p.state))
		}
		if p.state != manifest.Pending {
			continue
		}
		for _, id := range p.n.External {
			if s.cfg.ExternalDone == nil || !s.cfg.ExternalDone(id) {
				outside = append(outside, fmt.Sprintf("%s waits on issue %s, which is not done", p.n.ID, id))
			}
		}
	}
	var why []string
	if len(held) > 0 {
		why = append(why, strings.Join(held, ", ")+" (flip it to [pending] or run `claudopilot retry ID`)")
	}
	why = append(why, outside...)
	if len(why) == 0 {
		return "pending phases wait on phases that are not merged"
	}
	return strings.Join(why, "; ")
}

func (s *Scheduler) summary() Summary {
	sum := Summary{Counts: map[string]int{}, Wall: s.now().Sub(s.started), Usage: s.spend, Waiting: s.asking()}
	for _, p := range s.phases {
		sum.Counts[string(p.state)]++
		all := p.workerRuns + p.superRuns
		sum.Phases = append(sum.Phases, PhaseSummary{
			ID: p.n.ID, State: string(p.state), Attempts: all - p.runsBefore, AttemptsInAll: all,
			Spent: p.spent - p.spentBefore, Reason: p.reason, WaitsOn: p.waitsOn, LogPath: p.logPath,
			Usage: p.run, ByRole: p.byRole,
		})
		sum.Total = ledger.Add(sum.Total, p.usage)
	}
	return sum
}

// release books the end of p's attempt: its slot on its lane is free.
func (s *Scheduler) release(p *phase) {
	s.running--
	p.busy, p.attempting, p.finishing = false, false, false
	if p.lane != nil {
		p.lane.running--
	}
}

// foundDone marks a "done" record whose attempt found the branch already
// done, without running an agent: it is not counted as an attempt.
const foundDone = state.FoundDone

// unlaunch gives back the attempt a launch of role took.
func (p *phase) unlaunch(role state.Role) {
	if role == state.Supervisor {
		p.superRuns--
		p.superSpent--
	} else {
		p.workerRuns--
	}
}

// workerReport is what a roadmap phase's worker reported by its exit code,
// as Claudopilot's contract has it: 2 a checkpoint, 4 a dependency error.
// Either stops the phase with no supervisor spent: the run halts with
// that code, or under KEEP_GOING the phase is parked with its dependents.
// ReasonNone for anything else (an issue's agent never reports so).
func workerReport(p *phase, o Outcome) state.Reason {
	if o.Reason == state.ReasonUnschedulable {
		// Nor is one sent when the cluster has no room for the agent's
		// pod (AGENT_RUNNER=kubernetes): no repair can make any.
		return state.ReasonUnschedulable
	}
	if p.n.Outside || o.Role != state.Worker || o.Reason != state.ReasonExit || o.Cooldown > 0 {
		return state.ReasonNone
	}
	switch o.ExitCode {
	case 2:
		return state.ReasonCheckpoint
	case 4:
		return state.ReasonDeps
	}
	return state.ReasonNone
}

// noDoneAfter says whether a phase is without its DONE_ doc after a
// failed attempt: an attempt that ended without it (a worker's exit 5 or
// 6 is Claudopilot's "gave up" and "stopped short"), until one gets past
// the done check (a red gate); other failures tell nothing of it.
func noDoneAfter(was bool, o Outcome) bool {
	switch {
	case o.Reason == state.ReasonNoDone, o.Role == state.Worker && o.Reason == state.ReasonExit && (o.ExitCode == 5 || o.ExitCode == 6):
		return true
	case o.Reason == state.ReasonGate:
		return false
	}
	return was
}
