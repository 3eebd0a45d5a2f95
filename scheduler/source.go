package scheduler

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/state"
)

// EvAway: an outside node left the driver's hands (handed to a human for
// review, claimed by another instance, closed).
const EvAway = "away"

// outsideState is the loop's record of the outside nodes.
type outsideState struct {
	src    Source
	offers <-chan []OutsideNode
	nodes  map[string]OutsideNode // every outside node in the graph
	order  []string               // their ids in the source's order (its priority)
	// base is the manifest's own graph; s.rm is base With the nodes.
	base    *roadmap.Roadmap
	landed  chan MergeOutcome
	landing int      // landings under way (they hold no agent slot)
	queue   []*phase // done, waiting for dispatch to start their landing
	// told is each node's title and deps as last journaled and told
	// (EvNode), so a poll that changes nothing says nothing.
	told map[string]string
}

// SetSource adds a source of outside nodes (the issue queue). Call before
// Run.
func (s *Scheduler) SetSource(src Source) {
	s.out.src = src
	s.out.base = s.rm
	s.out.offers = src.Nodes()
	s.out.landed = make(chan MergeOutcome)
}

// sourceOpen is true while the source may still offer nodes.
func (s *Scheduler) sourceOpen() bool { return s.out.offers != nil }

// onOffers takes the source's current nodes. New ones join the graph as
// pending; ones the driver has not touched and the source no longer offers
// leave it; ones it works on, or gave a state, stay.
func (s *Scheduler) onOffers(ns []OutsideNode) {
	ns = s.takeAnswers(ns)
	ns = s.withdraw(ns)
	next := make(map[string]OutsideNode, len(ns))
	for _, n := range ns {
		if s.out.base.Node(n.ID) != nil {
			s.emit(Event{Kind: EvWarn, Phase: n.ID, Detail: "outside node " + n.ID + " has a phase's id; ignored"})
			continue
		}
		next[n.ID] = n
	}
	for id, n := range s.out.nodes {
		if _, offered := next[id]; offered {
			continue
		}
		if p := s.byID[id]; p != nil && (s.inFlight(p) || p.state != manifest.Pending || p.landing) {
			next[id] = n
		}
	}
	var order []string
	for _, n := range ns {
		if _, ok := next[n.ID]; ok {
			order = append(order, n.ID)
		}
	}
	for _, id := range s.out.order {
		if _, ok := next[id]; ok && !slices.Contains(order, id) {
			order = append(order, id)
		}
	}
	s.out.nodes, s.out.order = next, order
	s.regraph()
	s.tellNodes()
	for _, n := range ns {
		if p := s.byID[n.ID]; p != nil && n.Retry && !s.inFlight(p) && (p.state == manifest.Blocked || p.state == manifest.Failed) {
			s.retry(p)
			continue
		}
		if p := s.byID[n.ID]; p != nil && n.Resume && p.workerRuns == 0 && p.next == nil && !p.busy && p.state == manifest.Pending {
			// Worked by this driver before it was killed: resume its
			// branch, as for a phase found [running].
			p.next = &Job{Role: state.Worker, Resume: true}
			p.started = s.now()
			s.restoreOutside(p)
			_ = s.setState(p, manifest.Running)
		}
	}
}

// withdraw acts on the nodes the source names Away and returns the rest:
// an agent in flight is stopped (onOutcome drops the node when it is
// back), a node between attempts is dropped now; a landing is left to
// the source, and a node the driver never touched simply leaves.
func (s *Scheduler) withdraw(ns []OutsideNode) []OutsideNode {
	kept := ns[:0:0]
	for _, n := range ns {
		if n.Away == "" {
			kept = append(kept, n)
			continue
		}
		p := s.byID[n.ID]
		if p == nil || !p.n.Outside || s.out.nodes[n.ID].ID == "" {
			continue
		}
		switch {
		case p.landing:
			kept = append(kept, s.out.nodes[n.ID]) // the source ends it
		case p.busy && p.stop != nil:
			if p.away == "" {
				p.away = n.Away
				p.stop()
			}
			kept = append(kept, s.out.nodes[n.ID])
		case p.busy:
			kept = append(kept, s.out.nodes[n.ID])
		default:
			p.next = nil
			s.drop(p, n.Away)
		}
	}
	return kept
}

// awayOutcome books the end of an attempt withdraw stopped: the node is
// dropped with the source's reason; false for any other outcome.
func (s *Scheduler) awayOutcome(p *phase, o Outcome) bool {
	if p.away == "" {
		return false
	}
	why := p.away
	p.away, p.next = "", nil
	s.record(state.Record{Phase: o.ID, Event: "interrupted", Role: o.Role, Attempt: o.Attempt})
	s.emit(Event{Kind: EvExit, Phase: o.ID, Role: o.Role, Attempt: o.Attempt, Detail: "stopped: " + why, LogPath: o.LogPath})
	s.drop(p, why)
	return true
}

// restoreOutside gives a resumed outside node its counters from the
// journal, as restore does for a phase found [running] at start (outside
// nodes arrive later, offered by the source). Only the records since the
// node last ended count (merged, failed, blocked, retried or away): an
// issue is worked again in a later claim round with fresh counters. A
// journal that cannot be read leaves them at zero: the resumed attempt
// then counts as the first.
func (s *Scheduler) restoreOutside(p *phase) {
	if s.jn == nil {
		return
	}
	recs, err := state.ReadJournal(s.jn.Path())
	if err != nil {
		s.emit(Event{Kind: EvWarn, Phase: p.n.ID, Detail: "resumed without its attempt counts: " + err.Error()})
		return
	}
	var mine []state.Record
	for _, r := range recs {
		if r.Phase != p.n.ID {
			continue
		}
		switch r.Event {
		case "merged", "failed", "blocked", "retry", EvAway:
			mine = mine[:0]
			continue
		}
		mine = append(mine, r)
	}
	for _, r := range mine {
		if r.Event == "review-round" && r.Attempt > 1 {
			// REVIEW_MAX_ROUNDS holds across restarts, as for a phase.
			s.revPhase(p).round = r.Attempt
		}
	}
	hist, _ := state.History(mine)
	h := hist[p.n.ID]
	if h == nil {
		return
	}
	p.usage = h.Usage
	p.workerRuns, p.superRuns, p.superSpent = h.WorkerRuns, h.SuperRuns, h.SuperSpent
	p.reason, p.detail, p.spent = h.Reason, h.Detail, h.Spent
	p.runsBefore, p.spentBefore = p.workerRuns+p.superRuns, p.spent
	p.logPath = h.Log
	p.next.Session = h.Session[state.Worker]
	if h.Last == "fail" && h.LastFailBy != state.Supervisor && p.superSpent < s.cfg.MaxSupervisorAttempts {
		p.next = &Job{Role: state.Supervisor, Failure: p.reason, FailureLog: h.Log, Detail: p.detail, Resume: true}
	}
	if s.restoreAsk(p, h) {
		// onOffers makes it [running] next: an answered question's
		// attempt goes next, it is not owed to a [pending] node.
		if p.owed != nil {
			p.next, p.owed = p.owed, nil
		}
		if p.ask != nil {
			s.tellAsked(p) // the source asks again where it asks (once)
		}
	}
}

// drop takes an outside node out of the graph (it left the driver's
// hands). Nodes waiting on it then wait on it as an outside dep.
func (s *Scheduler) drop(p *phase, why string) {
	delete(s.out.nodes, p.n.ID)
	s.out.order = slices.DeleteFunc(s.out.order, func(id string) bool { return id == p.n.ID })
	s.forgetReview(p)
	s.record(state.Record{Phase: p.n.ID, Event: EvAway, Detail: why})
	s.emit(Event{Kind: EvAway, Phase: p.n.ID, Detail: why})
	s.regraph()
}

// tellNodes journals and tells each outside node's title, deps and
// campaign when they are new or changed: the page and the timeline name
// issues by them, draw their edges, and count each campaign's progress.
func (s *Scheduler) tellNodes() {
	if s.out.told == nil {
		s.out.told = map[string]string{}
	}
	for _, id := range s.out.order {
		n := s.out.nodes[id]
		key := n.Campaign + "\x00" + n.Title + "\x00" + strings.Join(n.Deps, "\x00")
		if s.out.told[id] == key {
			continue
		}
		s.out.told[id] = key
		deps := slices.Clone(n.Deps)
		s.record(state.Record{Phase: id, Event: EvNode, Title: n.Title, Deps: deps, Campaign: n.Campaign})
		s.emit(Event{Kind: EvNode, Phase: id, Title: n.Title, Deps: deps, Campaign: n.Campaign})
	}
}

// regraph rebuilds s.rm from the manifest's graph and the outside nodes,
// keeping each node's loop state.
func (s *Scheduler) regraph() {
	if s.out.base == nil {
		s.out.base = s.rm
	}
	rm, err := s.out.base.With(s.outsidePhases())
	if err != nil {
		s.emit(Event{Kind: EvWarn, Detail: "outside nodes ignored: " + err.Error()})
		return
	}
	s.adopt(rm)
}

// outsidePhases are the outside nodes as graph entries, in the source's
// order: with equal ranks, the loop starts them in it.
func (s *Scheduler) outsidePhases() []manifest.Phase {
	extra := make([]manifest.Phase, 0, len(s.out.order))
	for _, id := range s.out.order {
		n := s.out.nodes[id]
		extra = append(extra, manifest.Phase{ID: n.ID, Title: n.Title, Deps: n.Deps, Owns: n.Owns, Gate: n.Gate, Lane: n.Lane})
	}
	return extra
}

// adopt makes rm the loop's graph: nodes it had keep their state; new
// manifest nodes come with their manifest state, new outside ones pending.
func (s *Scheduler) adopt(rm *roadmap.Roadmap) {
	old := s.byID
	s.rm = rm
	s.phases = make([]*phase, len(rm.Nodes))
	s.byID = make(map[string]*phase, len(rm.Nodes))
	for i, n := range rm.Nodes {
		p := old[n.ID]
		if p == nil {
			p = &phase{n: n, state: n.State}
		} else {
			p.n = n
		}
		s.phases[i] = p
		s.byID[n.ID] = p
	}
}

// startLand hands a done outside node to its source's landing, which runs
// beside the merge owner and holds no agent slot.
func (s *Scheduler) startLand(ctx context.Context, p *phase) {
	p.busy, p.landing = true, true
	s.out.landing++
	j := MergeJob{ID: p.n.ID, Title: p.n.Title, Owns: p.n.Owns, Tip: p.tip, Gate: s.gateOf(p), ReviewFirst: s.reviewOn()}
	if rp := s.rev.ph[p.n.ID]; rp != nil {
		j.Verdict, rp.verdict = rp.verdict, nil
	}
	s.emit(Event{Kind: EvMerging, Phase: p.n.ID})
	go func() { s.out.landed <- s.out.src.Land(ctx, j) }()
}

// dispatchLands starts the landings that wait: they hold no slot, so all
// at once.
func (s *Scheduler) dispatchLands(ctx context.Context) {
	for _, p := range s.out.queue {
		s.startLand(ctx, p)
	}
	s.out.queue = nil
}

// landedAfterInterrupt books a landing that ended after an interrupt.
func (s *Scheduler) landedAfterInterrupt(m MergeOutcome) {
	s.out.landing--
	if p := s.byID[m.ID]; p != nil {
		p.busy, p.landing = false, false
		if m.OK {
			p.state = manifest.Merged
			s.record(state.Record{Phase: m.ID, Event: "merged", Commit: m.Commit})
		}
	}
}

// onLanded books an outside node's landing.
func (s *Scheduler) onLanded(m MergeOutcome) {
	s.out.landing--
	p := s.byID[m.ID]
	p.busy, p.landing = false, false
	switch {
	case m.OK:
		p.reason, p.detail = "", ""
		_ = s.setState(p, manifest.Merged)
		s.record(state.Record{Phase: m.ID, Event: "merged", Commit: m.Commit})
		s.durable()
		s.emit(Event{Kind: EvMerged, Phase: m.ID, State: string(manifest.Merged), Detail: m.Commit})
	case m.Away:
		s.drop(p, m.Detail)
	case m.Review && s.reviewOn():
		// Green: the loop's reviewers read it before it lands.
		p.tip = m.Commit
		s.startRound(p)
	case m.Stale && s.reviewOn():
		// The pull request, its base or the issue moved under the
		// reviewers: this round is not spent.
		p.tip = m.Commit
		s.reviewStale(p, m.Detail)
	case m.Err != nil:
		s.giveUp(p, state.ReasonMerge, m.Err.Error())
	default:
		s.record(state.Record{Phase: m.ID, Event: "fail", Reason: m.Reason, Detail: m.Detail, Log: m.LogPath})
		s.emit(Event{Kind: EvExit, Phase: m.ID, Reason: m.Reason, Detail: m.Detail, LogPath: m.LogPath})
		switch {
		case m.Reason == state.ReasonReview && m.Commit != "":
			// The source recorded the reviewers' BLOCKING with rounds
			// left: the worker takes their findings, beyond the reviewed
			// head.
			p.tip = m.Commit
			findings := m.Checks // the source puts the findings there
			if len(findings) == 0 {
				findings = []string{m.Detail}
			}
			s.reviewedAgain(p, findings)
		case (m.Reason == state.ReasonChecks || m.Reason == state.ReasonConflict) && m.Commit != "":
			// The supervisor repairs it: it must go beyond the red head.
			p.tip, p.checks = m.Commit, m.Checks
			s.failed(p, "", m.Reason, m.Detail, m.LogPath)
		default:
			// A push refused, a pull request closed: no agent can mend
			// that.
			if m.LogPath != "" {
				p.logPath = m.LogPath
			}
			s.giveUp(p, m.Reason, m.Detail)
		}
	}
}

// outsideJob fills in what an attempt at an outside node needs.
func (s *Scheduler) outsideJob(p *phase, j *Job) {
	n, ok := s.out.nodes[p.n.ID]
	if !ok || !p.n.Outside {
		return
	}
	w := n.Work
	j.Outside = &w
	if (j.Role == state.Supervisor && (j.Failure == state.ReasonChecks || j.Failure == state.ReasonConflict)) || len(j.Findings) > 0 {
		j.Since, j.Checks = p.tip, p.checks
	}
}

// priority is an outside node's Priority (a phase's is 0).
func (s *Scheduler) priority(p *phase) int {
	if !p.n.Outside {
		return 0
	}
	return s.out.nodes[p.n.ID].Priority
}

// outranks says whether a should start before b: a higher priority, or
// the same and a longer remaining path (rem).
func (s *Scheduler) outranks(a, b *phase, rem []time.Duration) bool {
	if pa, pb := s.priority(a), s.priority(b); pa != pb {
		return pa > pb
	}
	return rem[a.n.Index] > rem[b.n.Index]
}
