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
	until := s.now().Add(o.Cooldown)
	key := p.lane.quotaOf(o.Role)
	if until.After(s.cooldown[key]) {
		s.cooldown[key] = until
	}
	// No notBefore: the breaker holds the relaunch, and a lane's
	// FALLBACK on another account may take it at once.
	s.requeue(p, o, time.Time{})
	p.next.Session = o.Usage.SessionID // resume it after the wait
	held := s.lanesOn(key)
	detail := breakerText(key, held, s.cooldown[key], o.Detail)
	s.record(state.Record{Phase: o.ID, Event: "cooldown", Role: o.Role, Attempt: o.Attempt, Until: until, Cmd: key, Lane: p.lane.ID, Detail: detail})
	s.durable() // told to the user and notified: on disk first
	s.emit(Event{Kind: EvCooldown, Phase: o.ID, Role: o.Role, Until: s.cooldown[key], LogPath: o.LogPath, Lane: p.lane.ID, Lanes: held, Detail: detail})
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
