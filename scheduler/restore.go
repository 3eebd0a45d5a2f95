package scheduler

import (
	"fmt"
	"strings"
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
	s.repairLive(recs)
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

// journaledState is the live manifest's state a journal event follows:
// the driver writes [merged], [failed] or [blocked] to the live file
// before the record (land's flip before the outcome is booked;
// setState before record).
var journaledState = map[string]manifest.State{
	"merged": manifest.Merged, "failed": manifest.Failed, "blocked": manifest.Blocked,
}

// Journaled is the state the driver last wrote to the live manifest for a
// phase, by the journal, and the time of the record that followed it.
type Journaled struct {
	State manifest.State
	At    time.Time
}

// JournaledStates reads, per phase, the live manifest state the journal's
// last word on it says the driver wrote: [merged], [failed] or [blocked],
// when nothing came after (a retry, a launch). The one reading of the
// journal for a live manifest a power cut set back (repairLive) or left
// empty (engine).
func JournaledStates(recs []state.Record) map[string]Journaled {
	hist, _ := state.History(recs)
	out := make(map[string]Journaled)
	for _, r := range recs {
		st, ok := journaledState[r.Event]
		if !ok || r.Phase == "" {
			continue
		}
		if h := hist[r.Phase]; h != nil && h.Last == r.Event {
			out[r.Phase] = Journaled{st, r.Time}
		} else {
			delete(out, r.Phase)
		}
	}
	return out
}

// modTimer is a Store whose file has a modification time (roadmap.File).
type modTimer interface{ ModTime() (time.Time, error) }

// repairLive puts back the states a power cut took from the live
// manifest. The driver writes the file without an fsync (issue 25 §1: git
// keeps the base's committed manifest, the journal the driver's states),
// so after a power cut it may hold an older version whole. A phase the
// live file shows [pending] or [running] while the journal's last word on
// it is a [merged], [failed] or [blocked] written before its record is a
// lost write when the file is not newer than that record: the state is
// written again, and said in one line. A file written after the record is
// a person's (a [merged] phase set back to [pending] is allowed): it
// stands, as it always did. Only the driver's journal and its own file
// are read, never an agent's worktree.
func (s *Scheduler) repairLive(recs []state.Record) {
	mt, ok := s.store.(modTimer)
	if !ok {
		return
	}
	written, err := mt.ModTime()
	if err != nil {
		return // no file to compare: nothing is put back on a guess
	}
	last := JournaledStates(recs)
	var fixed []string
	for _, p := range s.phases {
		j, ok := last[p.n.ID]
		if !ok || p.n.Outside || written.After(j.At) || (p.state != manifest.Pending && p.state != manifest.Running) {
			continue
		}
		was := p.state
		if err := s.setState(p, j.State); err != nil {
			s.emit(Event{Kind: EvWarn, Phase: p.n.ID, Detail: err.Error()})
			continue
		}
		p.next = nil // not resumed: the journal says how it ended
		fixed = append(fixed, fmt.Sprintf("%s [%s] -> [%s]", p.n.ID, was, j.State))
	}
	if len(fixed) > 0 {
		s.emit(Event{Kind: EvWarn, Detail: fmt.Sprintf("%s was older than the journal's last states (a write lost to a power cut): put back %s",
			s.rm.ManifestPath, strings.Join(fixed, ", "))})
	}
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
