package scheduler

import (
	"slices"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/state"
)

// Speculative stacking (STACK=1, Config.Stack). A phase whose deps are
// all merged but one, and that one is done (its attempt over, its gate
// green) and waiting to land or landing, starts at once on that dep's
// tip (Job.StackOn) instead of waiting for the landing: the dep's merge
// gate and the dependent's agent run side by side.
//
//   - A stacked phase never lands before its dep: it waits in the merge
//     queue until the dep has landed (landsLater).
//   - When the dep lands, the stacked phase's next attempt merges the new
//     base into its branch first (Job.TakeBase); a done one meets it in
//     its own merge. Either way a merge: nothing is rewritten.
//   - When the dep is parked or fails, the stacked phase is stopped, its
//     branch set aside (kept), and it waits on the dep, [blocked]; when the
//     dep is retried it comes back and starts over from the base, or
//     stacked again (Job.Fresh).
//
// "Stacked" is not remembered: a phase that is [running] while one of its
// deps is not merged is stacked on it, after a restart too.

// EvStacked: a phase starts on its dep's tip (Detail names the dep).
const EvStacked = "stacked"

// stackDep returns the dep p may start on now, or nil.
func (s *Scheduler) stackDep(p *phase) *phase {
	if !s.cfg.Stack || s.reviewOn() || p.n.Outside {
		// A review reads the diff against the base: a stacked branch's
		// would hold its dep's work too. An outside node's branch starts
		// from its source's ref.
		return nil
	}
	var dep *phase
	for _, d := range s.rm.Deps(p.n) {
		q := s.phases[d.Index]
		if q.state == manifest.Merged {
			continue
		}
		if dep != nil {
			return nil // waits on two
		}
		dep = q
	}
	if dep == nil || dep.tip == "" || dep.state != manifest.Running {
		return nil
	}
	if s.merging != dep && !s.specAhead(dep) && !slices.Contains(s.mergeQ, dep) {
		return nil // not done, or gone back to its agents
	}
	for _, id := range p.n.External {
		if s.cfg.ExternalDone == nil || !s.cfg.ExternalDone(id) {
			return nil
		}
	}
	return dep
}

// stackOn fills in a launch's stacking: the dep's tip for a phase that
// starts stacked (told and journaled), and a fresh start for one that was
// stopped because its dep failed.
func (s *Scheduler) stackOn(p *phase, j *Job) {
	if p.fresh {
		j.Fresh, p.fresh = true, false
	}
	if p.verify != "" {
		j.StackedOn, p.verify = p.verify, ""
	}
	if j.Role != state.Worker || p.workerRuns+p.superRuns > 0 && !j.Fresh {
		return // a later attempt works where it is
	}
	dep := s.stackDep(p)
	if dep == nil {
		return
	}
	j.StackOn, p.stackTip = dep.tip, dep.tip
	s.record(state.Record{Phase: p.n.ID, Event: EvStacked, WaitsOn: dep.n.ID, Tip: dep.tip})
	s.emit(Event{Kind: EvStacked, Phase: p.n.ID, Detail: "on " + dep.n.ID + " at " + short(dep.tip)})
}

// landsLater is true for a phase that may not be handed to the merge owner
// yet: one of its deps has not landed (it was stacked on it).
func (s *Scheduler) landsLater(p *phase) bool {
	for _, d := range s.rm.Deps(p.n) {
		if s.phases[d.Index].state != manifest.Merged {
			return true
		}
	}
	return false
}

// mergeable counts the queued phases that may be handed over now or
// later in this run; a stacked phase whose dep can no longer land (no
// agent, merge or relaunch in sight for it) does not count, so the run
// can end.
func (s *Scheduler) mergeable() int {
	n := 0
	for _, p := range s.mergeQ {
		if !s.landsLater(p) || s.depsMoving(p) {
			n++
		}
	}
	return n
}

// depsMoving is true when every dep of p that has not landed is still on
// its way: an agent, a merge or a relaunch in flight, or waiting to land.
func (s *Scheduler) depsMoving(p *phase) bool {
	for _, d := range s.rm.Deps(p.n) {
		q := s.phases[d.Index]
		if q.state == manifest.Merged {
			continue
		}
		moving := q.busy || q.next != nil || slices.Contains(s.mergeQ, q)
		if !moving || q.state != manifest.Running {
			return false
		}
	}
	return true
}

// landed books, for phase id that just landed, what waited on it: the
// phases predicted to conflict with it and those stacked on it take the
// new base at their next attempt.
func (s *Scheduler) landed(id string) {
	s.landedPredicted(id)
	lp := s.byID[id]
	for _, d := range s.rm.Dependents(lp.n) {
		q := s.phases[d.Index]
		if q.state != manifest.Running {
			continue
		}
		q.takeBase = true
		if q.stackTip != "" && q.stackTip != lp.tip {
			// The dep landed from another tip than the one q started
			// on (a repair after a red merge; a rewrite, as for a
			// secret, would leave the old commits on q's branch only).
			q.verify = q.stackTip
		}
		q.stackTip = ""
	}
}

// verifyStacks sends a stacked phase that waits to land, whose dep landed
// from another tip, through one more pass of the runner instead: it
// checks the base holds the tip the phase started on (else sets the
// branch aside and starts over), merges the base in, and finding the
// branch done goes straight to the gate (no agent, no attempt).
func (s *Scheduler) verifyStacks() {
	for _, p := range slices.Clone(s.mergeQ) {
		if p.verify == "" || p.busy {
			continue
		}
		s.mergeQ = slices.DeleteFunc(s.mergeQ, func(x *phase) bool { return x == p })
		p.next = &Job{Role: state.Worker, Resume: true, TakeBase: true, StackedOn: p.verify}
		p.verify, p.takeBase = "", false
		p.notBefore = time.Time{}
	}
}

// unstack stops every phase stacked on p, which was just parked or
// failed: an agent in flight is stopped (its outcome is booked by
// stoppedOutcome), a relaunch or a waiting merge is dropped. Each waits on
// p, [blocked], its branch to be set aside when it starts again.
func (s *Scheduler) unstack(p *phase) {
	for _, d := range s.rm.Dependents(p.n) {
		q := s.phases[d.Index]
		if q.state != manifest.Running || q.stopping {
			continue
		}
		q.fresh = true
		q.stackTip, q.verify = "", ""
		q.waitsOn = p.n.ID
		s.record(state.Record{Phase: q.n.ID, Event: EvUnstacked, WaitsOn: p.n.ID})
		if q.busy && q.stop != nil && !s.mergeHeld(q) {
			q.stopping = true
			q.stop()
			continue // blocked when its outcome comes
		}
		s.specRelease(q)
		q.next = nil
		s.mergeQ = slices.DeleteFunc(s.mergeQ, func(x *phase) bool { return x == q })
		s.blockStacked(q, p.n.ID)
	}
}

// unstackParked stops, at start, a phase left [running] on a dep that is
// parked or failed (the driver died before it could).
func (s *Scheduler) unstackParked() {
	for _, p := range s.phases {
		if p.state == manifest.Blocked || p.state == manifest.Failed {
			s.unstack(p)
		}
	}
}

// EvUnstacked is journaled for a stacked phase stopped because its dep
// failed: its next start sets its branch aside (state.PhaseHistory.Fresh).
const EvUnstacked = "unstacked"

// blockStacked parks a stopped stacked phase behind the dep it was
// stacked on.
func (s *Scheduler) blockStacked(q *phase, dep string) {
	if err := s.setState(q, manifest.Blocked); err != nil {
		s.fatal = err
		return
	}
	s.record(state.Record{Phase: q.n.ID, Event: "blocked", WaitsOn: dep})
	s.emit(Event{Kind: EvBlocked, Phase: q.n.ID, State: string(manifest.Blocked), Detail: "waits on " + dep + " (stopped: it was stacked on " + dep + ")"})
}

// stoppedOutcome books the end of an attempt unstack stopped; false for
// any other outcome.
func (s *Scheduler) stoppedOutcome(p *phase, o Outcome) bool {
	if !p.stopping {
		return false
	}
	p.stopping = false
	s.record(state.Record{Phase: o.ID, Event: "interrupted", Role: o.Role, Attempt: o.Attempt})
	s.emit(Event{Kind: EvExit, Phase: o.ID, Role: o.Role, Attempt: o.Attempt, Detail: "stopped: its dep " + p.waitsOn + " failed", LogPath: o.LogPath})
	s.blockStacked(p, p.waitsOn)
	return true
}
