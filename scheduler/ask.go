package scheduler

import (
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/state"
)

// Needs input: an agent that needs a decision says so (the runner finds
// the CLAUDOPILOT-NEEDS-INPUT marker or the question file and ends the
// attempt with Outcome.Question). The attempt is not counted, no
// supervisor runs, and the phase stays held ([running]), so nothing that
// depends on it starts. The question is told once (an "ask" event,
// journaled and fsynced first); an answer (Control.Answers) sends the same
// attempt on with it; none within NEEDS_INPUT_HOURS parks the phase with
// reason needs-input. Everything is in the journal, so a restarted driver
// waits on the same question (restoreAsk).

// DefaultNeedsInputWait is NEEDS_INPUT_HOURS' default.
const DefaultNeedsInputWait = 24 * time.Hour

// asked is a question a phase's agent asked, waiting on the user.
type asked struct {
	question  string
	role      state.Role
	at, until time.Time
	job       Job // the attempt that asked, to go on with the answer
	session   string
}

// needsInput books an attempt that ended with a question.
func (s *Scheduler) needsInput(p *phase, o Outcome) {
	p.unlaunch(o.Role) // no attempt is counted
	now := s.now().Round(0).UTC().Truncate(time.Microsecond)
	p.ask = &asked{question: o.Question, role: o.Role, at: now, until: now.Add(s.cfg.NeedsInputWait), job: p.job, session: o.Usage.SessionID}
	if o.LogPath != "" {
		p.logPath = o.LogPath
	}
	lane := ""
	if p.lane != nil {
		lane = p.lane.ID
	}
	s.record(state.Record{Time: now, Phase: o.ID, Event: EvAsk, Role: o.Role, Attempt: o.Attempt, Detail: o.Question, Until: p.ask.until, Log: o.LogPath, Lane: lane})
	s.durable() // told to the user and notified: on disk first
	s.emit(Event{Time: now, Kind: EvAsk, Phase: o.ID, Role: o.Role, Attempt: o.Attempt, Detail: o.Question, Until: p.ask.until, LogPath: o.LogPath, Lane: lane})
	s.tellAsked(p)
}

// Asker is a Source that asks its nodes' questions on its own side (an
// issue comment) and offers the answers it gets there (OutsideNode.Answer).
// Asked is told each question a node's agent asks, again for one a
// restarted driver found open in the journal, and, with an empty
// question, that the node's question is closed (answered, or parked
// unanswered). It never blocks.
type Asker interface {
	Asked(id, question string, at time.Time)
}

// tellAsked tells the source of an outside node p about its question (nil:
// closed).
func (s *Scheduler) tellAsked(p *phase) {
	a, ok := s.out.src.(Asker)
	if !ok || !p.n.Outside {
		return
	}
	if p.ask == nil {
		a.Asked(p.n.ID, "", time.Time{})
		return
	}
	a.Asked(p.n.ID, p.ask.question, p.ask.at)
}

// takeAnswers takes the answers a source offers (OutsideNode.Answer) and
// returns the offers without them: an answer is no offer of a node.
func (s *Scheduler) takeAnswers(ns []OutsideNode) []OutsideNode {
	kept := ns[:0:0]
	for _, n := range ns {
		if n.Answer == nil {
			kept = append(kept, n)
			continue
		}
		s.onAnswers(map[string]Answer{n.ID: *n.Answer})
	}
	return kept
}

// onAnswers takes the user's answers: each one to the question it was
// given for, to a phase that still waits on it.
func (s *Scheduler) onAnswers(as map[string]Answer) {
	for id, a := range as {
		p := s.byID[id]
		if p == nil || p.ask == nil || !a.Asked.Equal(p.ask.at) {
			continue // not asked, answered already, or another question
		}
		s.answered(p, a.Text)
	}
}

// answered sends the attempt that asked on, with the answer: the same
// agent session when it can be resumed, else a fresh attempt told the
// question and the answer (the runner decides which).
func (s *Scheduler) answered(p *phase, text string) {
	q := p.ask
	s.record(state.Record{Phase: p.n.ID, Event: EvAnswer, Role: q.role, Detail: text})
	s.emit(Event{Kind: EvAnswer, Phase: p.n.ID, Role: q.role, Detail: text})
	s.goOn(p, text)
	s.tellAsked(p)
}

// goOn queues the attempt that asked p's open question, with its answer.
func (s *Scheduler) goOn(p *phase, text string) {
	q := p.ask
	p.ask = nil
	j := q.job
	j.Question, j.Answer, j.Session = q.question, text, q.session
	j.Mode, j.Fresh, j.Resume, j.Retry = "", false, false, false
	p.next, p.notBefore = &j, time.Time{}
}

// expireAsks parks the phases whose question went unanswered for
// NEEDS_INPUT_HOURS.
func (s *Scheduler) expireAsks(now time.Time) {
	for _, p := range s.phases {
		if p.ask == nil || now.Before(p.ask.until) {
			continue
		}
		q := p.ask
		p.ask = nil
		s.tellAsked(p)
		p.reason, p.detail = state.ReasonNeedsInput, "no answer within "+waitText(s.cfg.NeedsInputWait)+" to: "+q.question
		s.park(p)
	}
}

// waitText is NEEDS_INPUT_HOURS as a person writes it: 24h, 1h30m, 1.8s
// (time.Duration says 24h0m0s).
func waitText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// asking counts the phases that wait on an answer ("waiting on you").
func (s *Scheduler) asking() int {
	n := 0
	for _, p := range s.phases {
		if p.ask != nil {
			n++
		}
	}
	return n
}

// askEnds offers each open question's deadline to the timer.
func (s *Scheduler) askEnds(consider func(time.Time)) {
	for _, p := range s.phases {
		if p.ask != nil {
			consider(p.ask.until)
		}
	}
}

// restoreAsk brings back a question a phase's agent asked before the
// driver stopped: still open, it waits again (nothing is launched); once
// answered, the attempt goes on with the answer. False when the journal's
// last word on the phase is no question.
func (s *Scheduler) restoreAsk(p *phase, h *state.PhaseHistory) bool {
	if h.Last != EvAsk && h.Last != EvAnswer || p.state != manifest.Running && p.state != manifest.Pending {
		return false
	}
	j := Job{Role: h.AskRole}
	if j.Role == state.Supervisor {
		j.Failure, j.FailureLog, j.Detail = h.Reason, h.Log, h.Detail
	}
	q := &asked{question: h.Question, role: h.AskRole, at: h.Asked, until: h.AskUntil, job: j, session: h.Session[h.AskRole]}
	p.next, p.owed = nil, nil
	if h.Last == EvAsk {
		p.ask = q
		return true
	}
	p.ask = q
	s.goOn(p, h.Answer)
	if p.state == manifest.Pending {
		p.owed, p.next = p.next, nil
	}
	return true
}
