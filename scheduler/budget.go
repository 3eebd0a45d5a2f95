package scheduler

import (
	"fmt"
	"github.com/claudopilot/claudopilot/state"

	"github.com/claudopilot/claudopilot/ledger"
)

// book adds an attempt's reported spend to the phase and the run, journals
// it, and reports whether the phase is now over PHASE_MAX_COST_USD. The
// run's budget, once reached, stops new launches.
func (s *Scheduler) book(p *phase, o Outcome) (phaseOver bool) {
	if !o.Usage.Known() {
		return false
	}
	u := o.Usage
	lane := ""
	if p.lane != nil && o.Role != ReviewerRole {
		lane = p.lane.ID // the ledger says which lane spent it
	}
	s.record(state.Record{Phase: o.ID, Event: "usage", Role: o.Role, Attempt: o.Attempt, Usage: &u, Lane: lane})
	p.usage = ledger.Add(p.usage, u)
	p.run = ledger.Add(p.run, u)
	if p.byRole == nil {
		p.byRole = map[Role]ledger.Usage{}
	}
	p.byRole[o.Role] = ledger.Add(p.byRole[o.Role], u)
	s.spend = ledger.Add(s.spend, u)
	if c, ok := s.spend.Cost(); ok && s.cfg.RunMaxCost > 0 && c >= s.cfg.RunMaxCost && !s.budgetHit {
		s.budgetHit = true
		detail := fmt.Sprintf("run budget reached: %s of $%.2f (RUN_MAX_COST_USD); no new launches, running agents finish", ledger.CostText(s.spend), s.cfg.RunMaxCost)
		s.record(state.Record{Event: EvBudget, Detail: detail})
		s.emit(Event{Kind: EvBudget, Detail: detail})
	}
	c, ok := p.usage.Cost()
	return ok && s.cfg.PhaseMaxCost > 0 && c >= s.cfg.PhaseMaxCost
}

// overBudget parks a phase that spent its budget, whatever KEEP_GOING
// says: more attempts would spend more.
func (s *Scheduler) overBudget(p *phase, o Outcome) {
	if o.LogPath != "" {
		p.logPath = o.LogPath
	}
	p.transient = 0
	p.reason = ReasonBudget
	p.detail = fmt.Sprintf("spent %s of $%.2f (PHASE_MAX_COST_USD)", ledger.CostText(p.usage), s.cfg.PhaseMaxCost)
	s.record(state.Record{Phase: o.ID, Event: "fail", Role: o.Role, Attempt: o.Attempt, Reason: ReasonBudget, Detail: p.detail, Log: o.LogPath})
	s.emit(Event{Kind: EvBudget, Phase: o.ID, Reason: ReasonBudget, Detail: p.detail})
	s.park(p)
}
