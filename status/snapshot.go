package status

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/claudopilot/claudopilot/control"
	"github.com/claudopilot/claudopilot/land"
	"github.com/claudopilot/claudopilot/ledger"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/promote/record"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
)

// Snapshot is what status and explain read: the manifest, the run journal
// folded, and the lock. Reading it changes nothing, so it works while a run
// goes on.
type Snapshot struct {
	Roadmap *roadmap.Roadmap
	Layout  state.Layout
	Hist    map[string]*state.PhaseHistory
	Cool    state.Cooldowns
	// Rules are the newest run's, from the journal, with its lanes' slots
	// as it has them now; nil before any run.
	Rules *state.Rules
	// Side are the lane slots the newest run lent to side runs
	// (scanners), by lane.
	Side    map[string]int
	Live    bool // a driver holds the lock
	Lock    state.LockInfo
	LockSet bool // a lock file is there, held or stale
	// Paused: `claudopilot pause` holds every new launch, the switch the
	// loop itself reads (control.Switches).
	Paused bool
	Now    time.Time
}

// Read reads the journal of layout l and the lock at lockPath ("": none
// known) for the loaded roadmap rm.
func Read(rm *roadmap.Roadmap, l state.Layout, lockPath string, now time.Time) (*Snapshot, error) {
	s := &Snapshot{Roadmap: rm, Layout: l, Now: now}
	recs, err := state.ReadJournal(l.JournalPath())
	if err != nil {
		return nil, fmt.Errorf("read the journal: %w", err)
	}
	s.Hist, s.Cool = state.History(recs)
	s.Rules, s.Side = state.LastRules(recs), state.SideRuns(recs)
	if sw, err := control.Load(l.StateDir()); err == nil {
		s.Paused = sw.Paused
	}
	if lockPath != "" {
		s.Lock, s.LockSet = state.ReadLock(lockPath)
		_, s.Live = state.LockHeld(lockPath)
	}
	return s, nil
}

// View is the scheduler's View of this snapshot under rules (the newest
// run's, or the settings a run would resolve): status's eligible list and
// explain's reasons both come from scheduler.Holds over it. An outside dep
// is done when the journal shows it merged.
func (s *Snapshot) View(rules state.Rules) scheduler.View {
	return scheduler.FileView(s.Roadmap, rules, s.Cool, OutsideDone(s.Hist), s.Now)
}

// Outside lists the nodes from outside the manifest that the journal
// names.
func (s *Snapshot) Outside() []Node { return Outside(s.Hist, s.Live) }

// Node is the row of id: a manifest phase, or a node from outside the
// manifest that the journal names; ok is false for an id neither knows.
func (s *Snapshot) Node(id string) (n Node, ok bool) {
	if p := s.Roadmap.Node(id); p != nil {
		return phase(p, s.Hist, s.Live), true
	}
	return OutsideNode(s.Hist, id, s.Live)
}

// StateOf is a node's state: its manifest line's, or for an outside node
// its journal's; "unknown" for an id neither knows.
func (s *Snapshot) StateOf(id string) manifest.State {
	if n, ok := s.Node(id); ok {
		return n.State
	}
	return "unknown"
}

// Report is `status --json`; docs/status.md describes its fields.
type Report struct {
	Manifest string         `json:"manifest"`
	Live     bool           `json:"live"`
	PID      int            `json:"pid,omitempty"`
	Counts   map[string]int `json:"counts"` // the manifest's phases by state
	Phases   []Phase        `json:"phases"`
	// Running are the nodes a live run holds; Stopped, those left
	// [running] with no run going on (killed, interrupted): the next run
	// resumes them.
	Running  []string `json:"running"`
	Stopped  []string `json:"stopped,omitempty"`
	Eligible []string `json:"eligible"`
	// Asking are the nodes whose agent asked a question no one has
	// answered yet: waiting on you (claudopilot answer).
	Asking   []string `json:"waiting_on_you"`
	Cooldown string   `json:"cooldown_until,omitempty"`
	// PendingMove is set while the base checkout has not followed a
	// merge yet (its move is recorded in .claudopilot/state/advance.json).
	PendingMove *PendingMove `json:"pending_checkout_move,omitempty"`
	// BaseMoved is the last move of the base that the driver did not
	// make (.claudopilot/state/base-moved.json).
	BaseMoved *land.BaseMove `json:"base_moved_outside,omitempty"`
	// Paused: `claudopilot pause` holds new launches; LanesOff are lanes
	// switched off; Lanes is the pacer's last concurrency per lane.
	Paused bool `json:"paused"`
	// Usage adds up every node's spend from the journal; ByRole splits it.
	Usage    *ledger.Usage               `json:"usage,omitempty"`
	ByRole   map[state.Role]ledger.Usage `json:"usage_by_role,omitempty"`
	LanesOff []string                    `json:"lanes_off,omitempty"`
	Lanes    map[string]int              `json:"lanes,omitempty"`
	// Promote is each promote step's newest outcome (PROMOTE_TO; the
	// promote ledger, docs/queue.md): a red one waits for the next
	// interval.
	Promote []record.Result `json:"promote,omitempty"`
}

// Phase is one row of the report: a manifest phase, or after them a node
// from outside the manifest (Outside).
type Phase struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	State    string `json:"state"`
	Outside  bool   `json:"outside,omitempty"`
	Attempts int    `json:"attempts"`
	Reason   string `json:"reason,omitempty"`
	// Detail says more of a [failed] or [blocked] node's reason: the
	// files a protected, scope or secret refusal names, the paths of a
	// conflict.
	Detail string `json:"detail,omitempty"`
	// Away says why an outside node left the driver's hands (state
	// "away").
	Away    string `json:"away,omitempty"`
	WaitsOn string `json:"waits_on,omitempty"`
	Spent   string `json:"spent,omitempty"`
	// Log is the node's newest log; the caller may make it relative.
	Log string `json:"log,omitempty"`
	// Waiting says what the phase's merge waits for and what to do
	// (uncommitted files in the base checkout, a base that keeps moving).
	Waiting      string   `json:"waiting,omitempty"`
	WaitingFiles []string `json:"waiting_files,omitempty"`
	// Conflict is a merge conflict predicted for the running phase
	// (docs/landing.md, conflict prediction).
	Conflict string `json:"predicted_conflict,omitempty"`
	// Question is what the node's agent asked, unanswered yet; AnswerBy
	// when the node parks without an answer (NEEDS_INPUT_HOURS).
	Question string `json:"question,omitempty"`
	AnswerBy string `json:"answer_by,omitempty"`
	// Usage is what the phase's agents reported spending (unknown
	// figures are left out, never 0).
	Usage  *ledger.Usage               `json:"usage,omitempty"`
	ByRole map[state.Role]ledger.Usage `json:"usage_by_role,omitempty"`
	// Lane is what the node's worktree says of the attempt running in
	// it now, or of the last one (LANES only; docs/lanes.md).
	Lane *work.LaneMark `json:"lane,omitempty"`
}

// PendingMove is a base checkout move not finished yet.
type PendingMove struct {
	Dir  string `json:"dir"`
	From string `json:"from"`
	To   string `json:"to"`
}

// Report builds the status report under rules (see View).
func (s *Snapshot) Report(rules state.Rules) Report {
	r := Report{Manifest: s.Roadmap.ManifestPath, Live: s.Live, Counts: map[string]int{}, Running: []string{}, Eligible: []string{}, Asking: []string{}}
	if s.Live {
		r.PID = s.Lock.PID
	}
	for _, ms := range manifest.States {
		r.Counts[string(ms)] = 0
	}
	phases := Phases(s.Roadmap, s.Hist, s.Live)
	for _, n := range phases {
		r.Counts[string(n.State)]++
	}
	for _, n := range append(phases, s.Outside()...) {
		p := Phase{ID: n.ID, Title: n.Title, State: string(n.State), Outside: n.Outside, Attempts: n.Attempts,
			Reason: string(n.Reason), WaitsOn: n.WaitsOn, Log: s.Layout.LatestLog(n.ID),
			Waiting: n.Waiting, WaitingFiles: n.WaitingFiles, Conflict: n.Conflict}
		if n.State == Away {
			p.Away = n.Detail
		} else {
			p.Detail = n.Detail
		}
		if m, ok := work.WorktreeLane(s.Layout.Worktree(n.ID)); ok {
			p.Lane = &m
		}
		if n.Spent > 0 {
			p.Spent = n.Spent.Round(time.Second).String()
		}
		if n.Usage.Known() {
			u := n.Usage
			p.Usage, p.ByRole = &u, n.ByRole
			r.addUsage(n)
		}
		r.Phases = append(r.Phases, p)
		if n.Question != "" {
			p := &r.Phases[len(r.Phases)-1]
			p.Question, p.AnswerBy = n.Question, n.AnswerBy.Format(time.RFC3339)
			r.Asking = append(r.Asking, n.ID)
			continue // not running, and not stopped: it waits on an answer
		}
		if n.State == manifest.Running && s.Live {
			r.Running = append(r.Running, n.ID)
		} else if n.State == manifest.Running {
			r.Stopped = append(r.Stopped, n.ID)
		}
	}
	for _, n := range scheduler.Eligible(s.View(rules)) {
		r.Eligible = append(r.Eligible, n.ID)
	}
	if until := s.Cool.Latest(state.Worker); until.After(s.Now) {
		r.Cooldown = until.Format(time.RFC3339)
	}
	r.Promote, _ = record.ReadLatest(s.Layout.StateDir()) // unreadable: none shown
	if mv, err := land.Pending(s.Layout); err == nil && mv != nil {
		r.PendingMove = &PendingMove{Dir: mv.Dir, From: mv.Old, To: mv.New}
	}
	if mv, err := land.LastBaseMove(s.Layout); err == nil {
		r.BaseMoved = mv
	}
	if sw, err := control.Load(s.Layout.StateDir()); err == nil {
		r.Paused = sw.Paused
		for _, id := range slices.Sorted(maps.Keys(sw.LanesOff)) {
			if sw.LanesOff[id] {
				r.LanesOff = append(r.LanesOff, id)
			}
		}
	}
	if m, err := control.LoadLanes(s.Layout.StateDir()); err == nil && len(m) > 0 {
		r.Lanes = m
	}
	return r
}

// addUsage adds one node's spend to the totals.
func (r *Report) addUsage(n Node) {
	var total ledger.Usage
	if r.Usage != nil {
		total = *r.Usage
	}
	total = ledger.Add(total, n.Usage)
	r.Usage = &total
	if r.ByRole == nil {
		r.ByRole = map[state.Role]ledger.Usage{}
	}
	for role, u := range n.ByRole {
		r.ByRole[role] = ledger.Add(r.ByRole[role], u)
	}
}
