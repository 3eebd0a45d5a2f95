package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/state"
)

// One usage limit stops the fleet on its account, not just the agent that
// hit it: a breaker per quota (QuotaKey: the lane's account, or its
// command when it names none). Tripped, it holds launches on every lane
// of that account, for workers and supervisors, until the reset the
// output named (or DEFAULT_RATE_LIMIT_SLEEP); agents already running go
// on, and the attempt that hit it is not counted. The breakers are the
// loop's cooldown map, journaled ("cooldown" records, Cmd the quota) so a
// restarted driver keeps them.

// tripBreaker books an attempt that hit a usage limit.
func (s *Scheduler) tripBreaker(p *phase, o Outcome) {
	key := p.lane.quotaOf(o.Role)
	until := s.holdQuota(key, o.Cooldown)
	// No notBefore: the breaker holds the relaunch, and a lane's
	// FALLBACK on another account may take it at once.
	s.requeue(p, o, time.Time{})
	p.next.Session = o.Usage.SessionID // resume it after the wait
	s.tellBreaker(key, until, state.Record{Phase: o.ID, Role: o.Role, Attempt: o.Attempt, Lane: p.lane.ID}, o.LogPath, o.Detail)
}

// holdQuota trips quota key's breaker for d from now; it returns the end
// of this hold (the breaker keeps the later of it and one it had).
func (s *Scheduler) holdQuota(key string, d time.Duration) time.Time {
	until := s.now().Add(d)
	if until.After(s.cooldown[key]) {
		s.cooldown[key] = until
	}
	return until
}

// tellBreaker journals a tripped breaker (rec: who hit it; a side run's
// has no phase) and tells it.
func (s *Scheduler) tellBreaker(key string, until time.Time, rec state.Record, log, why string) {
	held := s.lanesOn(key)
	detail := breakerText(key, held, s.cooldown[key], why)
	rec.Event, rec.Until, rec.Cmd, rec.Detail = "cooldown", until, key, detail
	s.record(rec)
	s.durable() // told to the user and notified: on disk first
	s.emit(Event{Kind: EvCooldown, Phase: rec.Phase, Role: rec.Role, Until: s.cooldown[key], LogPath: log, Lane: rec.Lane, Lanes: held, Detail: detail})
}

// lanesOn names the lanes (their ids; "" for the one lane without LANES)
// whose worker or supervisor runs on quota key.
func (s *Scheduler) lanesOn(key string) []string {
	var out []string
	for _, l := range s.lanes {
		if l.quotaOf(state.Worker) == key || l.quotaOf(state.Supervisor) == key {
			out = append(out, l.ID)
		}
	}
	return out
}

// breakerText says what a tripped breaker holds, for the progress, the
// journal and the notification.
func breakerText(key string, lanes []string, until time.Time, why string) string {
	if why == "" {
		why = "rate limited"
	}
	where := "no launches"
	switch named := slices.DeleteFunc(slices.Clone(lanes), func(id string) bool { return id == "" }); len(named) {
	case 0:
	case 1:
		where += " on lane " + named[0]
	default:
		where += " on lanes " + strings.Join(named, ", ")
	}
	acct := "its command"
	if strings.HasPrefix(key, "account ") {
		acct = key
	}
	return fmt.Sprintf("%s (%s): %s until %s; running agents go on", why, acct, where, until.Local().Format("Jan 2 15:04"))
}
