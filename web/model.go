package web

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/claudopilot/claudopilot/ledger"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/runview"
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
	// Scanners, Promote and Campaigns are the queue's feed (feed.go).
	Scanners  []Scanner     `json:"scanners,omitempty"`
	Promote   []PromoteStep `json:"promote,omitempty"`
	Campaigns []Campaign    `json:"campaigns,omitempty"`
}

// Hold is a usage limit that stops launches on an account's lanes until
// its reset (docs/lanes.md, "One usage limit stops the account").
type Hold struct {
	Lanes  []string  `json:"lanes,omitempty"` // "" is the one lane without LANES
	Until  time.Time `json:"until"`
	Detail string    `json:"detail"`
}

// Model is the run's state for the page: runview's fold of the
// scheduler's events (the one fold the terminal and the queue's log render
// too), with what only the page draws (levels, the critical path, lanes,
// holds, Next). Apply is called from the event fan-out; State from HTTP
// handlers.
type Model struct {
	mu       sync.Mutex // guards everything below
	rm       *roadmap.Roadmap
	fold     *runview.Fold
	level    map[string]int  // wave of the whole graph, for drawing
	critical map[string]bool // on the critical path at start
	now      func() time.Time
	lanes    LaneSource // nil without LANES
	feed     FeedSource // nil without a queue's feed
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
	m := &Model{rm: rm, fold: runview.New(), level: map[string]int{}, critical: map[string]bool{}, now: time.Now, rules: rules, outsideDone: map[string]bool{}}
	m.fold.Run.Paused = paused
	path, _, _ := rm.CriticalPath(roadmap.FileState)
	for _, n := range path {
		m.critical[n.ID] = true
	}
	// The journal's history folds as status folds it (status.Phases).
	for i, sn := range status.Phases(rm, hist, false) {
		n := rm.Nodes[i]
		deps := []string{}
		for _, d := range rm.Deps(n) {
			deps = append(deps, d.ID)
		}
		m.fold.Add(seed(sn, append(deps, n.External...)))
	}
	for _, o := range status.Outside(hist, false) {
		if o.State == manifest.Merged {
			m.outsideDone[o.ID] = true
		}
		m.fold.Add(seed(o, append([]string{}, o.Deps...)))
	}
	m.relevel()
	return m
}

// seed is a node as the journal left it.
func seed(sn status.Node, deps []string) runview.Node {
	n := runview.Node{ID: sn.ID, Title: sn.Title, State: string(sn.State), Outside: sn.Outside, Deps: deps,
		Attempts: sn.Attempts, Spent: sn.Spent, Usage: sn.Usage, Log: sn.Log, Campaign: sn.Campaign,
		Reason: sn.Reason, Detail: sn.Detail, Question: sn.Question, Asked: sn.Asked, AnswerBy: sn.AnswerBy}
	for r, u := range sn.ByRole {
		n.AddRole(string(r), u)
	}
	return n
}

// relevel gives every node its wave in the graph of the phases and the
// outside nodes together (roadmap.With, the scheduler's own graph), so an
// issue is drawn after what it waits on and before what waits on it. A
// graph the outside deps make cyclic keeps the levels it had.
func (m *Model) relevel() {
	var extra []manifest.Phase
	for _, p := range m.fold.Nodes() {
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
			if m.fold.Node(n.ID) != nil {
				m.level[n.ID] = i
			}
		}
	}
}

// Apply folds one event into the state (runview's fold), and books what
// only the page draws: the lanes' cooldowns and holds, the outside nodes
// merged (for Next), the levels when the graph changed.
func (m *Model) Apply(ev scheduler.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	known := m.fold.Node(ev.Phase) != nil
	p := m.fold.Apply(ev)
	if ev.Kind == scheduler.EvMerged && roadmap.IsIssueRef(ev.Phase) {
		m.outsideDone[ev.Phase] = true // an outside node landed
	}
	if ev.Kind == scheduler.EvCooldown {
		m.hold(ev)
		// The attempt that hit the limit ran on the node's lane.
		if p != nil && p.Lane != "" && ev.Until.After(m.laneCool[p.Lane]) {
			m.laneCool[p.Lane] = ev.Until
		}
	}
	if p != nil && (!known || ev.Kind == scheduler.EvNode) {
		m.relevel()
	}
}

// phase is node n as the API shows it.
func (m *Model) phase(n *runview.Node, now time.Time) Phase {
	c := Phase{ID: n.ID, Title: n.Title, State: n.State, Outside: n.Outside, Activity: n.Activity,
		Deps: slices.Clone(n.Deps), Level: m.level[n.ID], Critical: m.critical[n.ID], Attempts: n.Attempts,
		Reason: string(n.Reason), Detail: n.Detail, Started: n.Started, Usage: n.Usage,
		ByRole: maps.Clone(n.ByRole), Lane: n.Lane, Log: n.Log, Cooldown: n.Cooldown, Conflict: n.Conflict,
		Question: n.Question, Asked: n.Asked, AnswerBy: n.AnswerBy}
	c.Elapsed = n.Spent.Seconds()
	if !c.Started.IsZero() {
		c.Elapsed += now.Sub(c.Started).Seconds()
	}
	if v, ok := c.Usage.Cost(); ok {
		c.Cost = &v
	}
	return c
}

// State is a copy of the state now.
func (m *Model) State() State {
	feed := m.feedNow()
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
	run := m.fold.Run
	st := State{Version: 1, Started: run.Started, Ended: run.Ended, Paused: run.Paused, Draining: run.Draining,
		Usage: run.Usage, ByRole: maps.Clone(run.ByRole), Cooldown: run.Cooldown}
	st.Lanes = m.laneFigures(lanes, now)
	st.Holds = m.holdsAt(now)
	st.Scanners, st.Promote = feed.Scanners, feed.Promote
	for _, c := range m.fold.Campaigns() {
		st.Campaigns = append(st.Campaigns, Campaign{Name: c.Name, Done: c.Done, Running: c.Running, Left: c.Left})
	}
	st.Running, st.Next = []string{}, []string{}
	st.Counts, st.WaitingOnYou = m.fold.Counts()
	states := map[string]manifest.State{}
	st.Phases = make([]Phase, 0, len(m.fold.Nodes()))
	for _, n := range m.fold.Nodes() {
		c := m.phase(n, now)
		if !c.Started.IsZero() {
			st.Running = append(st.Running, c.ID)
		}
		st.Phases = append(st.Phases, c)
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
