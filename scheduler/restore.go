package scheduler

import (
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/state"
)

// restore rebuilds counters from the journal so that attempts, supervisor
// runs, cooldowns and failure reasons survive a restart of the driver.
func (s *Scheduler) restore() error {
	now := s.now()
	for _, p := range s.phases {
		if p.state == manifest.Running {
			// The driver died while this phase ran. The runner finds its
			// worktree and goes straight to the gate if the branch is
			// already done; otherwise the worker is relaunched there and
			// that attempt counts.
			p.next = &Job{Role: state.Worker, Resume: true}
			p.started = now
		}
	}
	if s.jn == nil {
		return nil
	}
	recs, err := state.ReadJournal(s.jn.Path())
	if err != nil {
		return err
	}
	hist, cool := state.History(recs)
	s.restoreCooldowns(cool, now)
	for _, p := range s.phases {
		h := hist[p.n.ID]
		if h != nil {
			p.usage = h.Usage // spent is spent, whatever happened since
			p.fresh = h.Fresh // stopped while stacked: start over
			p.stackTip = h.StackTip
		}
		if h == nil || h.Last == "merged" || h.Last == "" {
			continue
		}
		switch p.state {
		case manifest.Merged:
			continue
		case manifest.Pending:
			if h.Last == "failed" || h.Last == "blocked" {
				// A human flipped it back: counters start over and the
				// kept branch is brought up to date first.
				p.retry = true
				s.record(state.Record{Phase: p.n.ID, Event: "retry"})
				continue
			}
		}
		p.workerRuns, p.superRuns, p.superSpent = h.WorkerRuns, h.SuperRuns, h.SuperSpent
		p.reason, p.detail, p.waitsOn, p.spent = h.Reason, h.Detail, h.WaitsOn, h.Spent
		p.runsBefore, p.spentBefore = p.workerRuns+p.superRuns, p.spent
		p.logPath = h.Log
		if p.state == manifest.Pending && h.Last != "retry" {
			// Left mid-way by a drain (or flipped back by hand from
			// [running]): it goes on as a [running] phase would, once
			// it may start.
			p.owed = &Job{Role: state.Worker, Resume: true}
		}
		if s.restoreAsk(p, h) {
			continue
		}
		job := p.next
		if job == nil {
			job = p.owed
		}
		if job == nil {
			continue
		}
		// A crash: resume the agent's session where it was.
		job.Session = h.Session[state.Worker]
		if h.Last == "fail" && h.LastFailBy != state.Supervisor && p.superSpent < s.cfg.MaxSupervisorAttempts {
			*job = Job{Role: state.Supervisor, Failure: p.reason, FailureLog: h.Log, Detail: p.detail, Resume: true}
		}
	}
	s.restoreReviews(recs)
	s.unstackParked()
	return nil
}

// restoreCooldowns takes the journal's cooldowns that still run. The loop
// keys a cooldown by command; one journaled before commands were holds
// every lane of its role, which errs on the side of not hitting a limit
// twice.
func (s *Scheduler) restoreCooldowns(cool state.Cooldowns, now time.Time) {
	for _, l := range s.lanes {
		for _, role := range []state.Role{state.Worker, state.Supervisor} {
			cmd := l.quotaOf(role)
			if until := cool.For(cmd, role); until.After(now) && until.After(s.cooldown[cmd]) {
				s.cooldown[cmd] = until
			}
		}
	}
}
