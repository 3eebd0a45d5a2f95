package web

import "time"

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
		for _, p := range m.phases {
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
