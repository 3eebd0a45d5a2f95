package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/state"
)

// Side runs are agent runs outside the graph (a scanner, package scanner)
// that take a slot from the same lanes as the phases' agents and wait out
// the same usage-limit breakers (docs/queue.md, "Scanners and refill").
// The loop owns the slots, so it grants them: a side run waits while the
// run is paused, draining, halted or over budget, and while any phase
// waits for a slot (the graph's work goes first); then it takes a slot on
// the first lane, in LANES order, that has one free and no cooldown for
// workers. It gives the slot back when it ends, with the usage limit it
// hit, if any, which trips that lane's breaker as a worker's would.

// Event kinds of side runs.
const (
	EvSideStart = "side-start" // a side run took a lane slot (Title: who, Lane)
	EvSideEnd   = "side-end"   // it gave the slot back (Title: who, Lane)
)

// ErrRunEnded: the run's loop has ended, so no slot will be granted.
var ErrRunEnded = errors.New("the run has ended")

// Side is the loop's door for side runs: NewSide makes one, Config.Side
// hands it to the loop, and Acquire asks it for a slot from any goroutine.
type Side struct {
	msgs  chan sideMsg
	ended chan struct{}
	once  sync.Once
}

// NewSide makes the door of one run's loop.
func NewSide() *Side {
	return &Side{msgs: make(chan sideMsg), ended: make(chan struct{})}
}

// SideSlot is a lane slot lent to a side run: the lane and the command and
// account its workers run on.
type SideSlot struct {
	Lane, Cmd, Account string
	side               *Side
	ask                *sideAsk
}

// sideAsk is one side run's request; reply has room for the grant, so the
// loop never blocks on it.
type sideAsk struct {
	who   string
	reply chan SideSlot
}

// sideMsg carries a request (back false) or a slot given back (or a
// request withdrawn) into the loop.
type sideMsg struct {
	ask      *sideAsk
	back     bool
	cooldown time.Duration
	why, log string
}

// Acquire waits for a lane slot for the side run who ("scanner bugs"). It
// returns ctx's error when ctx ends first, ErrRunEnded when the loop has.
// The slot must be given back with Release.
func (d *Side) Acquire(ctx context.Context, who string) (SideSlot, error) {
	a := &sideAsk{who: who, reply: make(chan SideSlot, 1)}
	if err := d.send(ctx, sideMsg{ask: a}); err != nil {
		return SideSlot{}, err
	}
	select {
	case g := <-a.reply:
		return g, nil
	case <-ctx.Done():
		// Withdrawn: the loop drops the request, or takes back the slot
		// it granted meanwhile.
		d.send(context.Background(), sideMsg{ask: a, back: true})
		return SideSlot{}, ctx.Err()
	case <-d.ended:
		return SideSlot{}, ErrRunEnded
	}
}

// Release gives the slot back. cooldown > 0 says the run hit a usage limit
// (why: the agent's words, log its log): the lane's breaker trips as for a
// worker's attempt. Once the loop has ended it does nothing.
func (g SideSlot) Release(cooldown time.Duration, why, log string) {
	if g.side != nil {
		g.side.send(context.Background(), sideMsg{ask: g.ask, back: true, cooldown: cooldown, why: why, log: log})
	}
}

func (d *Side) send(ctx context.Context, m sideMsg) error {
	select {
	case d.msgs <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-d.ended:
		return ErrRunEnded
	}
}

// end tells every waiting and later caller that the loop has ended.
func (d *Side) end() {
	if d != nil {
		d.once.Do(func() { close(d.ended) })
	}
}

// sideState is the loop's view of side runs. Only the loop touches it.
type sideState struct {
	waiting []*sideAsk
	granted map[*sideAsk]*laneSlot
}

// sideMsgs is the channel the loop reads side runs' messages on (nil, so
// never ready, without Config.Side).
func (s *Scheduler) sideMsgs() <-chan sideMsg {
	if s.cfg.Side == nil {
		return nil
	}
	return s.cfg.Side.msgs
}

// onSide books a request, or a slot given back (a request withdrawn).
func (s *Scheduler) onSide(m sideMsg) {
	if !m.back {
		s.side.waiting = append(s.side.waiting, m.ask)
		return
	}
	if i := slices.Index(s.side.waiting, m.ask); i >= 0 {
		s.side.waiting = slices.Delete(s.side.waiting, i, i+1)
		return
	}
	l := s.side.granted[m.ask]
	if l == nil {
		return
	}
	delete(s.side.granted, m.ask)
	l.running--
	s.record(state.Record{Event: EvSideEnd, Title: m.ask.who, Lane: l.ID})
	s.emit(Event{Kind: EvSideEnd, Title: m.ask.who, Lane: l.ID})
	if m.cooldown > 0 {
		key := l.quotaOf(state.Worker)
		until := s.holdQuota(key, m.cooldown)
		s.tellBreaker(key, until, state.Record{Role: state.Worker, Lane: l.ID}, m.log, m.ask.who+": "+m.why)
	}
}

// dispatchSide lends the free slots no phase waits for to side runs, in
// the order they asked.
func (s *Scheduler) dispatchSide(now time.Time) {
	if len(s.side.waiting) == 0 || s.paused || s.budgetHit || s.draining || s.halt != nil || s.fatal != nil || s.phaseWaits(now) {
		return
	}
	for len(s.side.waiting) > 0 {
		var l *laneSlot
		for _, c := range s.lanes {
			if s.usable(c, state.Worker, now) {
				l = c
				break
			}
		}
		if l == nil {
			return
		}
		a := s.side.waiting[0]
		s.side.waiting = s.side.waiting[1:]
		if s.side.granted == nil {
			s.side.granted = map[*sideAsk]*laneSlot{}
		}
		s.side.granted[a] = l
		l.running++
		// Journaled before it is granted, so explain counts the slot as
		// taken while the side run has it (state.SideRuns).
		s.record(state.Record{Event: EvSideStart, Title: a.who, Lane: l.ID})
		a.reply <- SideSlot{Lane: l.ID, Cmd: l.cmdOf(state.Worker), Account: l.Account, side: s.cfg.Side, ask: a}
		s.emit(Event{Kind: EvSideStart, Title: a.who, Lane: l.ID, Detail: fmt.Sprintf("%s took a slot on lane %s", a.who, laneName(l.ID))})
	}
}

// phaseWaits is true when a phase could take a slot now, on a lane it may
// run on: a relaunch that is due, or a pending phase whose deps are merged
// (or landing: dispatch keeps it a slot) and whose scope is free. A phase
// whose own lane is full or cooling down does not hold side runs back from
// another lane.
func (s *Scheduler) phaseWaits(now time.Time) bool {
	limit := s.checkpointLine()
	for _, p := range s.phases {
		if p.busy || p.ask != nil {
			continue
		}
		if p.next != nil {
			if !p.notBefore.After(now) && s.laneFor(p, p.next.Role, now) != nil {
				return true
			}
			continue
		}
		if p.state == manifest.Pending && (limit == 0 || p.n.Line <= limit) && s.readiness(p, now) != notReady &&
			s.scopeFree(p) == nil && s.laneFor(p, state.Worker, now) != nil {
			return true
		}
	}
	return false
}
