package web

import (
	"slices"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/scheduler"
)

// Lane is one lane as the API shows it (LANES only; docs/lanes.md).
type Lane struct {
	ID   string `json:"id"`
	Mode string `json:"mode"` // always, window or off
	// Want is what the pacer's last pass found the lane wants, before
	// the resource budget; Concurrency what it got, the slots the loop
	// has now; Why the rule that decided the want.
	Want        int    `json:"want"`
	Concurrency int    `json:"concurrency"`
	Why         string `json:"why,omitempty"`
	// Running counts the agents running on the lane now.
	Running int `json:"running"`
	// Cooldown is the end of a rate-limit cooldown an agent on this lane
	// hit (zero when none is running).
	Cooldown time.Time `json:"cooldown_until,omitzero"`
	Off      bool      `json:"switched_off"` // `claudopilot lane off ID`
}

// LaneSource gives each lane's configured and paced figures (ID, Mode,
// Want, Concurrency, Why, Off); the model adds Running and Cooldown from
// the events. It may read files: State calls it outside the model's lock.
type LaneSource func() []Lane

// SetLanes makes the state show lanes, from src.
func (m *Model) SetLanes(src LaneSource) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lanes = src
}

// laneFigures fills in what the events tell of each lane. Called with
// m.mu held.
func (m *Model) laneFigures(ls []Lane, now time.Time) []Lane {
	for i := range ls {
		for _, p := range m.fold.Nodes() {
			if !p.Started.IsZero() && p.Lane == ls[i].ID {
				ls[i].Running++
			}
		}
		if until := m.laneCool[ls[i].ID]; until.After(now) {
			ls[i].Cooldown = until
		}
	}
	return ls
}

// hold books a usage limit: every lane of its account waits until its
// reset. Called with m.mu held.
func (m *Model) hold(ev scheduler.Event) {
	if m.laneCool == nil {
		m.laneCool = map[string]time.Time{}
	}
	for _, id := range ev.Lanes {
		if ev.Until.After(m.laneCool[id]) {
			m.laneCool[id] = ev.Until
		}
	}
	if m.holds == nil {
		m.holds = map[string]Hold{}
	}
	k := strings.Join(ev.Lanes, ",")
	if h, ok := m.holds[k]; !ok || ev.Until.After(h.Until) {
		m.holds[k] = Hold{Lanes: slices.Clone(ev.Lanes), Until: ev.Until, Detail: ev.Detail}
	}
}

// holdsAt lists the usage limits still holding at now, soonest reset
// first. Called with m.mu held.
func (m *Model) holdsAt(now time.Time) []Hold {
	var out []Hold
	for _, h := range m.holds {
		if h.Until.After(now) {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b Hold) int { return a.Until.Compare(b.Until) })
	return out
}
