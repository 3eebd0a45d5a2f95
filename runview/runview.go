// Package runview is the one fold of a run's events into what each node
// (a phase, or an issue of the queue) is doing now (issue 23 §6): its
// state, attempt, role, lane, reason, cost, question, cooldown. The
// terminal's table, the web page's state and the queue's log lines render
// a Fold; none folds the events itself, so they cannot disagree on what a
// node is doing (TestViewsAgree in internal/cli/progress).
//
// A Fold is not safe for concurrent use: its owner (one goroutine, or a
// caller's mutex) applies the events and reads it.
package runview

import (
	"slices"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/ledger"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

// Away is the state of an outside node that left the driver's hands (a
// pull request handed to a human, the issue closed or claimed elsewhere).
const Away = state.Away

// WaitingOnYou is the state shown for a running node whose agent asked a
// question no one has answered yet.
const WaitingOnYou = "waiting on you"

// Node is what one node is doing now.
type Node struct {
	ID    string
	Title string
	State string // the manifest state; "away" for an outside node gone
	// Outside is set for a node from outside the manifest (an issue,
	// "#12"); Offered while only an EvNode named it (nothing ran yet).
	Outside, Offered bool
	Deps             []string
	// Campaign is an outside node's campaign ("" none), from EvNode.
	Campaign string
	// Role, Attempt and Lane are the latest launch's; Attempts counts the
	// attempts (the journal's at start, and every launch since).
	Role     state.Role
	Attempt  int
	Attempts int
	Lane     string
	// Activity is what it does now in a few words: the running agent's
	// role, "merging", "waiting: …" (a merge waiting, a usage limit),
	// "waiting on you"; "" between steps.
	Activity string
	// Note is the last word on it, for a one-line view: the exit's
	// reason, "cooldown", "retry", "asks: …", "review", "merging", what a
	// merge waits for, why it left, why it is parked.
	Note string
	// Reason and Detail say why its last attempt failed or why it is
	// parked; Detail also why it is away. Cleared by a launch and a merge.
	Reason state.Reason
	Detail string
	// Log is the log of what failed or parked it (the journal's, or an
	// exit's); empty until one.
	Log string
	// Started is when the running attempt began (zero between attempts);
	// Since the latest launch, kept after it ends; Spent adds the ended
	// attempts' time.
	Started, Since time.Time
	Spent          time.Duration
	Usage          ledger.Usage
	ByRole         map[string]ledger.Usage
	// Until is the end of what it counts down to: a cooldown, a retry's
	// backoff, the answer's deadline. Cooldown is the latest usage limit's
	// reset.
	Until, Cooldown time.Time
	// Question is what its agent asked while it waits on an answer; Asked
	// when, AnswerBy when it parks unanswered.
	Question        string
	Asked, AnswerBy time.Time
	// Gating: a gate runs (the attempt's, or the merge commit's); Stopped:
	// an interrupt ended its agent; WaitFiles: the uncommitted files its
	// merge waits for; Conflict: a merge conflict predicted.
	Gating    bool
	Stopped   bool
	WaitFiles []string
	Conflict  string
}

// Shown is the node's state as a one-word view shows it: a running node
// is "waiting on you" while its question waits, "stopped" once an
// interrupt ended its agent, "waiting" while its merge waits, "gate" while
// a gate runs and "merging" while the merge owner has it.
func (n *Node) Shown() string {
	if n.State != string(manifest.Running) {
		return n.State
	}
	switch {
	case n.Question != "":
		return WaitingOnYou
	case n.Stopped:
		return "stopped"
	case strings.HasPrefix(n.Note, "waiting"), strings.HasPrefix(n.Note, "waits for"):
		return "waiting"
	case n.Note == "merging":
		if n.Gating {
			return "gate"
		}
		return "merging"
	case n.Gating:
		return "gate"
	}
	return n.State
}

// AddRole adds u to role's share of the node's usage.
func (n *Node) AddRole(role string, u ledger.Usage) {
	if n.ByRole == nil {
		n.ByRole = map[string]ledger.Usage{}
	}
	n.ByRole[role] = ledger.Add(n.ByRole[role], u)
}

// Run is what the events say about the run as a whole.
type Run struct {
	Started  time.Time
	Ended    string
	Paused   bool
	Draining bool
	// Cooldown is the latest usage limit's reset.
	Cooldown time.Time
	Usage    ledger.Usage
	ByRole   map[string]ledger.Usage
}

// AddRole adds u to role's share of the run's usage.
func (r *Run) AddRole(role string, u ledger.Usage) {
	if r.ByRole == nil {
		r.ByRole = map[string]ledger.Usage{}
	}
	r.ByRole[role] = ledger.Add(r.ByRole[role], u)
}

// Fold is the run's nodes in the order they became known, and the run.
type Fold struct {
	Run   Run
	nodes []*Node
	byID  map[string]*Node
}

// New is an empty fold; Add seeds it with the nodes known at start.
func New() *Fold { return &Fold{byID: map[string]*Node{}} }

// Add adds a node as known at start (the manifest's, the journal's); its
// usage counts in the run's. A node already there is replaced.
func (f *Fold) Add(n Node) *Node {
	p := &n
	if p.Deps == nil {
		p.Deps = []string{}
	}
	if old := f.byID[n.ID]; old != nil {
		*old = n
		return old
	}
	f.nodes = append(f.nodes, p)
	f.byID[n.ID] = p
	f.Run.Usage = ledger.Add(f.Run.Usage, n.Usage)
	for r, u := range n.ByRole {
		f.Run.AddRole(r, u)
	}
	return p
}

// Node is node id, nil when unknown.
func (f *Fold) Node(id string) *Node { return f.byID[id] }

// Nodes are the nodes in the order they became known. The slice is the
// fold's: read it, do not keep it across an Apply.
func (f *Fold) Nodes() []*Node { return f.nodes }

// Counts is the number of nodes in each manifest state (every state
// present, 0 or more) and how many wait on the user's answer.
func (f *Fold) Counts() (byState map[string]int, waitingOnYou int) {
	byState = map[string]int{}
	for _, s := range manifest.States {
		byState[string(s)] = 0
	}
	for _, n := range f.nodes {
		byState[n.State]++
		if n.Question != "" {
			waitingOnYou++
		}
	}
	return byState, waitingOnYou
}

// Campaign is one campaign's progress: its nodes merged (Done), running
// (Running: an agent, a gate, a merge or a question under way), and
// Left: offered or parked, not yet merged. A node that left the driver's
// hands (away) no longer counts.
type Campaign struct {
	Name                string
	Done, Running, Left int
}

// Campaigns is each campaign's progress, by name, from the nodes this run
// knows (the journal's at start, and the events since).
func (f *Fold) Campaigns() []Campaign {
	by := map[string]*Campaign{}
	var out []*Campaign
	for _, n := range f.nodes {
		if n.Campaign == "" || n.State == string(Away) {
			continue
		}
		c := by[n.Campaign]
		if c == nil {
			c = &Campaign{Name: n.Campaign}
			by[n.Campaign] = c
			out = append(out, c)
		}
		switch manifest.State(n.State) {
		case manifest.Merged:
			c.Done++
		case manifest.Running:
			c.Running++
		default:
			c.Left++
		}
	}
	slices.SortFunc(out, func(a, b *Campaign) int { return strings.Compare(a.Name, b.Name) })
	res := make([]Campaign, len(out))
	for i, c := range out {
		res[i] = *c
	}
	return res
}

// Apply folds one event in and returns the node it is about (nil for an
// event about the run, or a warning about a node not known). An event
// about a node not known adds it: an issue the queue took up after start.
func (f *Fold) Apply(ev scheduler.Event) *Node {
	f.applyRun(ev)
	n := f.nodeFor(ev)
	if n == nil {
		return nil
	}
	if ev.State != "" {
		n.State = ev.State
	}
	if ev.Kind != scheduler.EvNode {
		n.Offered = false
	}
	n.Gating = ev.Kind == scheduler.EvGate
	f.applyQuestion(n, ev)
	switch ev.Kind {
	case scheduler.EvLaunch, scheduler.EvExit, scheduler.EvCooldown, scheduler.EvRetry:
		f.applyAttempt(n, ev)
	default:
		f.applyStep(n, ev)
	}
	return n
}

// applyRun folds the events about the run as a whole.
func (f *Fold) applyRun(ev scheduler.Event) {
	switch ev.Kind {
	case scheduler.EvStart:
		f.Run.Started = ev.Time
	case scheduler.EvEnd:
		f.Run.Ended = ev.Detail
	case scheduler.EvPaused:
		f.Run.Paused = true
	case scheduler.EvResumed:
		f.Run.Paused = false
	case scheduler.EvDrain:
		f.Run.Draining = true
	case scheduler.EvCooldown:
		if ev.Until.After(f.Run.Cooldown) {
			f.Run.Cooldown = ev.Until
		}
	}
}

// nodeFor is the event's node, added when the event is the first word on
// it (a warning alone adds none).
func (f *Fold) nodeFor(ev scheduler.Event) *Node {
	if ev.Phase == "" {
		return nil
	}
	if n := f.byID[ev.Phase]; n != nil {
		return n
	}
	if ev.Kind == scheduler.EvWarn {
		return nil
	}
	return f.Add(Node{ID: ev.Phase, State: string(manifest.Pending), Outside: roadmap.IsIssueRef(ev.Phase), Offered: ev.Kind == scheduler.EvNode})
}

// applyQuestion keeps the question asked until it is answered, or the
// node moves on without an answer (launched, parked, merged, gone).
func (f *Fold) applyQuestion(n *Node, ev scheduler.Event) {
	switch ev.Kind {
	case scheduler.EvAsk:
		n.Question, n.Asked, n.AnswerBy = ev.Detail, ev.Time, ev.Until
		n.Activity, n.Until, n.Note = WaitingOnYou, ev.Until, "asks: "+ev.Detail
	case scheduler.EvAnswer, scheduler.EvBlocked, scheduler.EvFailed, scheduler.EvLaunch, scheduler.EvMerged, scheduler.EvAway:
		n.Question, n.Asked, n.AnswerBy = "", time.Time{}, time.Time{}
		if n.Activity == WaitingOnYou {
			n.Activity = ""
		}
		if strings.HasPrefix(n.Note, "asks: ") {
			n.Note, n.Until = "", time.Time{}
		}
	}
}

// applyAttempt folds an attempt's start and end, and the waits after one
// (a usage limit's cooldown, a transient error's retry).
func (f *Fold) applyAttempt(n *Node, ev scheduler.Event) {
	switch ev.Kind {
	case scheduler.EvLaunch:
		n.Attempts++
		n.Role, n.Attempt, n.Lane, n.Activity = ev.Role, ev.Attempt, ev.Lane, string(ev.Role)
		n.Started, n.Since, n.Until, n.Stopped = ev.Time, ev.Time, time.Time{}, false
		n.Reason, n.Detail, n.Note = "", "", ""
	case scheduler.EvExit:
		if !n.Started.IsZero() {
			n.Spent += ev.Time.Sub(n.Started)
			n.Started = time.Time{}
		}
		n.Activity = ""
		if ev.Reason != "" {
			n.Reason, n.Detail, n.Note = ev.Reason, ev.Detail, string(ev.Reason)
		}
		if ev.LogPath != "" {
			n.Log = ev.LogPath
		}
		n.Stopped = ev.Detail == "interrupted"
		if ev.Usage != nil {
			n.Usage = ledger.Add(n.Usage, *ev.Usage)
			n.AddRole(string(ev.Role), *ev.Usage)
			f.Run.Usage = ledger.Add(f.Run.Usage, *ev.Usage)
			f.Run.AddRole(string(ev.Role), *ev.Usage)
		}
	case scheduler.EvRetry:
		n.Until, n.Note = ev.Until, ev.Kind
	case scheduler.EvCooldown:
		// Not a failure: the attempt is not counted and goes on after the
		// reset (the exit before it said "exit").
		n.Cooldown, n.Until, n.Note = ev.Until, ev.Until, ev.Kind
		n.Activity, n.Reason, n.Detail = "waiting: usage limit", "", ev.Detail
	}
}

// applyStep folds the steps between and after attempts: review, merge,
// parking, leaving.
func (f *Fold) applyStep(n *Node, ev scheduler.Event) {
	switch ev.Kind {
	case scheduler.EvReview:
		n.Note = "review"
	case scheduler.EvVerdict:
		n.Note = ""
	case scheduler.EvMerging:
		n.Activity = "merging"
		if !strings.HasPrefix(n.Note, "waiting:") {
			n.Note = "merging"
		}
	case scheduler.EvWait:
		n.Activity = "waiting: " + ev.Detail
		n.WaitFiles, n.Note = ev.Files, ev.Detail
		if n.Note == "" {
			n.Note = "waits for: " + strings.Join(ev.Files, ", ")
		}
	case scheduler.EvConflict:
		n.Conflict = ev.Detail
	case scheduler.EvNode:
		n.Title, n.Deps, n.Campaign = ev.Title, append([]string{}, ev.Deps...), ev.Campaign
	case scheduler.EvAway:
		n.State, n.Activity, n.Reason, n.Detail, n.Note = string(Away), "", "", ev.Detail, ev.Detail
		n.Started = time.Time{}
	case scheduler.EvMerged:
		n.Activity, n.Reason, n.Detail, n.Conflict, n.Note = "", "", "", "", ""
	case scheduler.EvFailed, scheduler.EvBlocked:
		n.Activity = ""
		n.Reason, n.Detail = ev.Reason, ev.Detail
		n.Note = string(ev.Reason)
		if ev.Detail != "" && ev.Reason == "" {
			n.Note = ev.Detail
		}
		if ev.LogPath != "" {
			n.Log = ev.LogPath // what parked it: the page's pane opens on it
		}
	}
}
