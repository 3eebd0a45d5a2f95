package scheduler

import (
	"fmt"

	"github.com/claudopilot/claudopilot/state"

	"github.com/claudopilot/claudopilot/ledger"
)

// book adds an attempt's reported spend (and its agent sessions) to the
// phase and the run, journals it, and reports whether the phase has now
// reached one of its caps (capReached). The run's budget, once reached,
// stops new launches.
func (s *Scheduler) book(p *phase, o Outcome) (phaseOver bool) {
	if !o.Usage.Known() && o.Usage.Sessions == 0 {
		return false
	}
	u := o.Usage
	lane := ""
	if p.lane != nil && o.Role != state.ReviewerRole {
		lane = p.lane.ID // the ledger says which lane spent it
	}
	s.record(state.Record{Phase: o.ID, Event: "usage", Role: o.Role, Attempt: o.Attempt, Usage: &u, Lane: lane})
	p.usage = ledger.Add(p.usage, u)
	p.run = ledger.Add(p.run, u)
	if p.byRole == nil {
		p.byRole = map[state.Role]ledger.Usage{}
	}
	p.byRole[o.Role] = ledger.Add(p.byRole[o.Role], u)
	s.spend = ledger.Add(s.spend, u)
	if c, ok := s.spend.Cost(); ok && s.cfg.RunMaxCost > 0 && c >= s.cfg.RunMaxCost && !s.budgetHit {
		s.budgetHit = true
		detail := fmt.Sprintf("run budget reached: %s of $%.2f (RUN_MAX_COST_USD); no new launches, running agents finish", ledger.CostText(s.spend), s.cfg.RunMaxCost)
		s.record(state.Record{Event: EvBudget, Detail: detail})
		s.emit(Event{Kind: EvBudget, Detail: detail})
	}
	return s.capReached(p) != ""
}

// capReached names the lifetime cap p's spend has reached (over every
// attempt, role, reviewer and run: the ledger), or "".
func (s *Scheduler) capReached(p *phase) string {
	if c, ok := p.usage.Cost(); ok && s.cfg.PhaseMaxCost > 0 && c >= s.cfg.PhaseMaxCost {
		return fmt.Sprintf("spent %s of $%.2f (PHASE_MAX_COST_USD)", ledger.CostText(p.usage), s.cfg.PhaseMaxCost)
	}
	return s.countCap(p)
}

// countCap names the token or session cap p has reached, or "". Unlike
// dollars, these are checked before a launch too: a restarted driver
// must not start one more session over the cap.
func (s *Scheduler) countCap(p *phase) string {
	if n, ok := p.usage.TokenCount(); ok && s.cfg.PhaseMaxTokens > 0 && n >= s.cfg.PhaseMaxTokens {
		return fmt.Sprintf("used %d tokens of %d (PHASE_MAX_TOKENS)", n, s.cfg.PhaseMaxTokens)
	}
	if n := p.usage.Sessions; s.cfg.PhaseMaxSessions > 0 && n >= s.cfg.PhaseMaxSessions {
		return fmt.Sprintf("started %d agent sessions of %d (PHASE_MAX_SESSIONS)", n, s.cfg.PhaseMaxSessions)
	}
	return ""
}

// capBeforeLaunch parks p instead of launching j when p has reached a
// token or session cap, and reports whether it did. A phase resumed after
// a crash is launched anyway, told the cap (Job.Capped): its branch may
// be done, which costs no session, and the runner starts no agent.
func (s *Scheduler) capBeforeLaunch(p *phase, j *Job) bool {
	why := s.countCap(p)
	if why == "" {
		return false
	}
	if j.Resume {
		j.Capped = why
		return false
	}
	p.next, p.owed, p.transient = nil, nil, 0
	p.reason, p.detail = state.ReasonBudget, why
	s.record(state.Record{Phase: p.n.ID, Event: "fail", Reason: state.ReasonBudget, Detail: why})
	s.emit(Event{Kind: EvBudget, Phase: p.n.ID, Reason: state.ReasonBudget, Detail: why})
	s.park(p)
	return true
}

// overBudget parks a phase that reached a cap, whatever KEEP_GOING says:
// more attempts would spend more.
func (s *Scheduler) overBudget(p *phase, o Outcome) {
	if o.LogPath != "" {
		p.logPath = o.LogPath
	}
	p.transient = 0
	p.reason = state.ReasonBudget
	p.detail = s.capReached(p)
	if p.detail == "" {
		p.detail = o.Detail // the runner's word: a resumed phase it did not start (Job.Capped)
	}
	s.record(state.Record{Phase: o.ID, Event: "fail", Role: o.Role, Attempt: o.Attempt, Reason: state.ReasonBudget, Detail: p.detail, Log: o.LogPath})
	s.emit(Event{Kind: EvBudget, Phase: o.ID, Reason: state.ReasonBudget, Detail: p.detail})
	s.park(p)
}
