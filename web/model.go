package web

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/claudopilot/claudopilot/ledger"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/status"
)

// Phase is one node of the run as the API shows it.
type Phase struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	State string `json:"state"` // the manifest state; "away" for an outside node
	// Outside is set for a node from outside the manifest (an issue of
	// the queue, "#12"): its row, title and deps come from the journal
	// and the events (EvNode).
	Outside  bool     `json:"outside,omitempty"`
	Activity string   `json:"activity,omitempty"` // worker, supervisor, reviewer, merging, waiting: …
	Deps     []string `json:"deps"`
	Level    int      `json:"level"`    // wave of the whole graph (issues too), for drawing
	Critical bool     `json:"critical"` // on the critical path of the work left at start
	Attempts int      `json:"attempts"`
	Reason   string   `json:"reason,omitempty"`
	Detail   string   `json:"detail,omitempty"`
	// Started is when its current attempt began; Elapsed adds the time
	// of its attempts so far, in seconds.
	Started time.Time    `json:"started,omitzero"`
	Elapsed float64      `json:"elapsed_s"`
	Usage   ledger.Usage `json:"usage"`
	Cost    *float64     `json:"cost_usd,omitempty"`
	// ByRole splits Usage by worker, supervisor and reviewer.
	ByRole   map[string]ledger.Usage `json:"usage_by_role,omitempty"`
	Lane     string                  `json:"lane,omitempty"`
	Log      string                  `json:"log,omitempty"`
	Cooldown time.Time               `json:"cooldown_until,omitzero"`
	spent    time.Duration           // finished attempts' time

	// Conflict is a merge conflict predicted for the running phase
	// (docs/landing.md, conflict prediction).
	Conflict string `json:"predicted_conflict,omitempty"`
	// Question is what its agent asked, while it waits on the user's
	// answer (action "answer"); Asked is when, AnswerBy when it parks
	// unanswered.
	Question string    `json:"question,omitempty"`
	Asked    time.Time `json:"asked,omitzero"`
	AnswerBy time.Time `json:"answer_by,omitzero"`
}

// State is GET /api/v1/state.
type State struct {
	Version  int                     `json:"version"`
	Started  time.Time               `json:"started,omitzero"`
	Ended    string                  `json:"ended,omitempty"`
	Paused   bool                    `json:"paused"`
	Draining bool                    `json:"draining"`
	Phases   []Phase                 `json:"phases"`
	Running  []string                `json:"running"`
	Next     []string                `json:"next"`
	Counts   map[string]int          `json:"counts"`
	Usage    ledger.Usage            `json:"usage"`
	Cost     *float64                `json:"cost_usd,omitempty"`
	ByRole   map[string]ledger.Usage `json:"usage_by_role,omitempty"`
	Cooldown time.Time               `json:"cooldown_until,omitzero"`
	// WaitingOnYou counts the nodes whose agent's question waits on an
	// answer.
	WaitingOnYou int `json:"waiting_on_you"`
	// Lanes are the run's lanes with LANES set (docs/lanes.md).
	Lanes []Lane `json:"lanes,omitempty"`
	// Holds are the usage limits holding launches now, each on every lane
	// of its account, with the reset to count down to.
	Holds []Hold `json:"holds,omitempty"`
}

// Hold is a usage limit that stops launches on an account's lanes until
// its reset (docs/lanes.md, "One usage limit stops the account").
type Hold struct {
	Lanes  []string  `json:"lanes,omitempty"` // "" is the one lane without LANES
	Until  time.Time `json:"until"`
	Detail string    `json:"detail"`
}

// Model is the run's state, kept from the scheduler's events. Apply is
// called from the event fan-out; State from HTTP handlers.
type Model struct {
	mu     sync.Mutex // guards everything below
	rm     *roadmap.Roadmap
	phases []*Phase
	byID   map[string]*Phase
	st     State
	now    func() time.Time
	lanes  LaneSource // nil without LANES
	// laneCool is each lane's latest rate-limit cooldown end; holds
	// the usage limits by the lanes they hold.
	laneCool map[string]time.Time
	holds    map[string]Hold
	// rules and outsideDone feed the scheduler's eligibility rule for
	// Next: the run's KEEP_GOING and IGNORE_LOOP_CHECKPOINTS, and the
	// outside nodes ("#12") merged, from the journal and the events.
	rules       state.Rules
	outsideDone map[string]bool
}

// NewModel starts from the roadmap as loaded (and the journal's history, so
// attempts and cost of earlier runs show), under the run's rules.
func NewModel(rm *roadmap.Roadmap, hist map[string]*state.PhaseHistory, rules state.Rules, paused bool) *Model {
	m := &Model{rm: rm, byID: map[string]*Phase{}, now: time.Now, rules: rules, outsideDone: map[string]bool{}}
	m.st = State{Version: 1, Paused: paused}
	crit := map[string]bool{}
	path, _, _ := rm.CriticalPath(roadmap.FileState)
	for _, n := range path {
		crit[n.ID] = true
	}
	// The journal's history folds as status folds it (status.Phases).
	for i, sn := range status.Phases(rm, hist, false) {
		n := rm.Nodes[i]
		p := &Phase{ID: n.ID, Title: sn.Title, State: string(sn.State), Critical: crit[n.ID], Deps: []string{}}
		for _, d := range rm.Deps(n) {
			p.Deps = append(p.Deps, d.ID)
		}
		p.Deps = append(p.Deps, n.External...)
		p.Attempts, p.spent, p.Usage, p.Log = sn.Attempts, sn.Spent, sn.Usage, sn.Log
		p.Reason, p.Detail = string(sn.Reason), sn.Detail
		p.Question, p.Asked, p.AnswerBy = sn.Question, sn.Asked, sn.AnswerBy
		for r, u := range sn.ByRole {
			p.addRole(string(r), u)
			m.st.addRole(string(r), u)
		}
		m.st.Usage = ledger.Add(m.st.Usage, sn.Usage)
		m.phases = append(m.phases, p)
		m.byID[n.ID] = p
	}
	for _, o := range status.Outside(hist, false) {
		if o.State == manifest.Merged {
			m.outsideDone[o.ID] = true
		}
		p := m.addOutside(o.ID)
		p.Title, p.Deps = o.Title, append(p.Deps, o.Deps...)
		p.State, p.Attempts, p.spent, p.Usage, p.Log = string(o.State), o.Attempts, o.Spent, o.Usage, o.Log
		p.Reason, p.Detail = string(o.Reason), o.Detail
		p.Question, p.Asked, p.AnswerBy = o.Question, o.Asked, o.AnswerBy
		for r, u := range o.ByRole {
			p.addRole(string(r), u)
			m.st.addRole(string(r), u)
		}
		m.st.Usage = ledger.Add(m.st.Usage, o.Usage)
	}
	m.relevel()
	return m
}

// addOutside adds a row for outside node id, pending until its journal or
// its events say more (its title and deps: EvNode).
func (m *Model) addOutside(id string) *Phase {
	p := &Phase{ID: id, State: string(manifest.Pending), Outside: true, Deps: []string{}}
	m.phases = append(m.phases, p)
	m.byID[id] = p
	return p
}

// relevel gives every node its wave in the graph of the phases and the
// outside nodes together (roadmap.With, the scheduler's own graph), so an
// issue is drawn after what it waits on and before what waits on it. A
// graph the outside deps make cyclic keeps the levels it had.
func (m *Model) relevel() {
	var extra []manifest.Phase
	for _, p := range m.phases {
		if p.Outside {
			extra = append(extra, manifest.Phase{ID: p.ID, Title: p.Title, Deps: p.Deps})
		}
	}
	g, err := m.rm.With(extra)
	if err != nil {
		return
	}
	all := func(*roadmap.Node) manifest.State { return manifest.Pending }
	for i, lv := range g.Levels(all) {
		for _, n := range lv {
			if p := m.byID[n.ID]; p != nil {
				p.Level = i
			}
		}
	}
}

// Apply folds one event into the state.
func (m *Model) Apply(ev scheduler.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.byID[ev.Phase]
	switch ev.Kind {
	case scheduler.EvStart:
		m.st.Started = ev.Time
	case scheduler.EvEnd:
		m.st.Ended = ev.Detail
	case scheduler.EvPaused:
		m.st.Paused = true
	case scheduler.EvResumed:
		m.st.Paused = false
	case scheduler.EvDrain:
		m.st.Draining = true
	case scheduler.EvCooldown:
		if ev.Until.After(m.st.Cooldown) {
			m.st.Cooldown = ev.Until
		}
		m.hold(ev)
	}
	if ev.Kind == scheduler.EvMerged && roadmap.IsIssueRef(ev.Phase) {
		m.outsideDone[ev.Phase] = true // an outside node landed
	}
	if p == nil && roadmap.IsIssueRef(ev.Phase) && ev.Kind != scheduler.EvWarn {
		// An outside node the journal did not name at start: its first
		// event brings it.
		p = m.addOutside(ev.Phase)
		m.relevel()
	}
	if p == nil {
		return
	}
	if ev.State != "" {
		p.State = ev.State
	}
	switch ev.Kind {
	case scheduler.EvAsk:
		p.Question, p.Asked, p.AnswerBy, p.Activity = ev.Detail, ev.Time, ev.Until, "waiting on you"
	case scheduler.EvAnswer, scheduler.EvBlocked, scheduler.EvFailed:
		p.Question, p.Asked, p.AnswerBy = "", time.Time{}, time.Time{}
		if p.Activity == "waiting on you" {
			p.Activity = ""
		}
	}
	switch ev.Kind {
	case scheduler.EvLaunch:
		p.Attempts++
		p.Activity, p.Started, p.Lane = string(ev.Role), ev.Time, ev.Lane
		p.Reason, p.Detail = "", ""
	case scheduler.EvExit:
		if !p.Started.IsZero() {
			p.spent += ev.Time.Sub(p.Started)
			p.Started = time.Time{}
		}
		p.Activity = ""
		if ev.Reason != "" {
			p.Reason, p.Detail = string(ev.Reason), ev.Detail
		}
		if ev.LogPath != "" {
			p.Log = ev.LogPath
		}
		if ev.Usage != nil {
			p.Usage = ledger.Add(p.Usage, *ev.Usage)
			m.st.Usage = ledger.Add(m.st.Usage, *ev.Usage)
			p.addRole(string(ev.Role), *ev.Usage)
			m.st.addRole(string(ev.Role), *ev.Usage)
		}
	case scheduler.EvMerging:
		p.Activity = "merging"
	case scheduler.EvWait:
		p.Activity = "waiting: " + ev.Detail
	case scheduler.EvConflict:
		p.Conflict = ev.Detail
	case scheduler.EvNode:
		p.Title, p.Deps = ev.Title, append([]string{}, ev.Deps...)
		m.relevel()
	case scheduler.EvAway:
		// It left the driver's hands (a pull request handed to a human,
		// the issue closed or claimed elsewhere): Detail says why.
		p.State, p.Activity, p.Reason, p.Detail, p.Started = string(status.Away), "", "", ev.Detail, time.Time{}
	case scheduler.EvMerged:
		p.Activity, p.Reason, p.Detail, p.Conflict = "", "", "", ""
	case scheduler.EvFailed, scheduler.EvBlocked:
		p.Activity = ""
		p.Reason, p.Detail = string(ev.Reason), ev.Detail
		if ev.LogPath != "" {
			p.Log = ev.LogPath // what parked it: the pane opens on it
		}
	case scheduler.EvCooldown:
		// Not a failure: the attempt is not counted and goes on after the
		// reset (the exit before it said "exit").
		p.Cooldown, p.Activity, p.Reason, p.Detail = ev.Until, "waiting: usage limit", "", ev.Detail
		// The attempt that hit the limit ran on the phase's lane.
		if p.Lane != "" && ev.Until.After(m.laneCool[p.Lane]) {
			if m.laneCool == nil {
				m.laneCool = map[string]time.Time{}
			}
			m.laneCool[p.Lane] = ev.Until
		}
	}
}

// State is a copy of the state now.
func (m *Model) State() State {
	m.mu.Lock()
	src := m.lanes
	m.mu.Unlock()
	var lanes []Lane
	if src != nil {
		lanes = src() // may read files: not under the lock
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	st := m.st
	st.Lanes = m.laneFigures(lanes, now)
	st.Holds = m.holdsAt(now)
	st.ByRole = maps.Clone(st.ByRole)
	st.Phases = make([]Phase, len(m.phases))
	st.Running, st.Next = []string{}, []string{}
	st.Counts = map[string]int{}
	for _, s := range manifest.States {
		st.Counts[string(s)] = 0
	}
	states := map[string]manifest.State{}
	for i, p := range m.phases {
		c := *p
		c.Elapsed = c.spent.Seconds()
		if !c.Started.IsZero() {
			c.Elapsed += now.Sub(c.Started).Seconds()
			st.Running = append(st.Running, c.ID)
		}
		if v, ok := c.Usage.Cost(); ok {
			c.Cost = &v
		}
		c.Deps = slices.Clone(c.Deps)
		c.ByRole = maps.Clone(c.ByRole)
		st.Phases[i] = c
		st.Counts[c.State]++
		if c.Question != "" {
			st.WaitingOnYou++
		}
		states[c.ID] = manifest.State(c.State)
	}
	// Next is what the scheduler's own rule (scheduler.Holds) lets
	// start: deps merged (issues too), no scope clash with a running
	// phase, no LOOP-CHECKPOINT in force above it.
	view := scheduler.View{
		Roadmap:      m.rm,
		State:        func(d *roadmap.Node) manifest.State { return states[d.ID] },
		Held:         func(d *roadmap.Node) bool { return states[d.ID] == manifest.Running },
		ExternalDone: func(id string) bool { return m.outsideDone[id] },
		KeepGoing:    m.rules.KeepGoing, IgnoreCheckpoints: m.rules.IgnoreCheckpoints,
	}
	for _, n := range scheduler.Eligible(view) {
		st.Next = append(st.Next, n.ID)
	}
	if v, ok := st.Usage.Cost(); ok {
		st.Cost = &v
	}
	return st
}

func (p *Phase) addRole(role string, u ledger.Usage) {
	if p.ByRole == nil {
		p.ByRole = map[string]ledger.Usage{}
	}
	p.ByRole[role] = ledger.Add(p.ByRole[role], u)
}

func (s *State) addRole(role string, u ledger.Usage) {
	if s.ByRole == nil {
		s.ByRole = map[string]ledger.Usage{}
	}
	s.ByRole[role] = ledger.Add(s.ByRole[role], u)
}
