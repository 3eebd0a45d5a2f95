package status

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/claudopilot/claudopilot/ledger"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/state"
)

// Node is what the manifest and the journal say about one node.
type Node struct {
	ID    string
	Title string // an outside node's is its "node" record's ("" before one)
	State manifest.State
	// Outside is set for a node from outside the manifest (an issue,
	// "#12"): its state is its last journal record's (OutsideState).
	Outside bool
	// Deps and Campaign are an outside node's, from its "node" record.
	Deps     []string
	Campaign string
	Attempts int
	// Reason, Detail and WaitsOn say why a [failed] or [blocked] node is
	// parked; Detail also why an outside node is away. They are empty in
	// any other state.
	Reason  state.Reason
	Detail  string
	WaitsOn string
	Spent   time.Duration
	// Usage adds up what its agents reported spending; ByRole splits it.
	Usage  ledger.Usage
	ByRole map[state.Role]ledger.Usage
	// Log is the failing attempt's log as the journal names it.
	Log string
	// Waiting (what its merge waits for) and Conflict (a merge conflict
	// predicted) are set only for a running node while a driver lives:
	// the journal's last word is stale otherwise.
	Waiting      string
	WaitingFiles []string
	Conflict     string
	// Last is the last lifecycle event the journal holds for it ("" none).
	Last string
	// Question is what its agent asked, while no answer is given (the
	// node waits on the user); AnswerBy is when it parks unanswered.
	Question        string
	Asked, AnswerBy time.Time
}

// Phases folds the journal's history into one row per manifest phase, in
// manifest order; live says a driver holds the lock now.
func Phases(rm *roadmap.Roadmap, hist map[string]*state.PhaseHistory, live bool) []Node {
	out := make([]Node, 0, len(rm.Nodes))
	for _, n := range rm.Nodes {
		out = append(out, phase(n, hist, live))
	}
	return out
}

func phase(n *roadmap.Node, hist map[string]*state.PhaseHistory, live bool) Node {
	return fold(Node{ID: n.ID, Title: roadmap.CleanTitle(n.Title), State: n.State}, hist[n.ID], live)
}

// Outside lists the nodes from outside the manifest that the journal
// names (ids "#N"), by number.
func Outside(hist map[string]*state.PhaseHistory, live bool) []Node {
	var out []Node
	for id, h := range hist {
		// An issue the queue only offered has a title on record and no
		// lifecycle yet: the journal does not name it as worked on.
		if roadmap.IsIssueRef(id) && h.Last != "" {
			out = append(out, fold(Node{ID: id, State: OutsideState(h), Outside: true}, h, live))
		}
	}
	slices.SortFunc(out, func(a, b Node) int { return cmp.Compare(number(a.ID), number(b.ID)) })
	return out
}

// OutsideNode is the outside node id as the journal shows it; ok is false
// when the journal has no record of it.
func OutsideNode(hist map[string]*state.PhaseHistory, id string, live bool) (n Node, ok bool) {
	h := hist[id]
	if h == nil || h.Last == "" || !roadmap.IsIssueRef(id) {
		return Node{ID: id}, false
	}
	return fold(Node{ID: id, State: OutsideState(h), Outside: true}, h, live), true
}

// Away is the state of an outside node that left the driver's hands
// (state.Away).
const Away = state.Away

// OutsideState is an outside node's state from its journal
// (state.PhaseHistory.OutsideState); pending when it has none.
func OutsideState(h *state.PhaseHistory) manifest.State {
	if h == nil {
		return manifest.Pending
	}
	return h.OutsideState()
}

// OutsideDone says whether the journal shows the outside node id merged:
// a dep on it is done.
func OutsideDone(hist map[string]*state.PhaseHistory) func(id string) bool {
	return func(id string) bool { h := hist[id]; return h != nil && OutsideState(h) == manifest.Merged }
}

// fold adds what the history says to a node whose state is known.
func fold(n Node, h *state.PhaseHistory, live bool) Node {
	if h == nil {
		return n
	}
	if n.Outside {
		n.Title, n.Deps, n.Campaign = h.Title, h.Deps, h.Campaign
	}
	n.Attempts = h.WorkerRuns + h.SuperRuns
	n.Spent = h.Spent
	n.Usage = h.Usage
	n.ByRole = h.ByRole
	n.Log = h.Log
	n.Last = h.Last
	switch n.State {
	case manifest.Failed, manifest.Blocked:
		n.Reason, n.Detail, n.WaitsOn = h.Reason, h.Detail, h.WaitsOn
	case Away:
		n.Detail = h.Detail
	}
	if h.Last == "ask" && (n.State == manifest.Running || n.State == manifest.Pending) {
		n.Question, n.Asked, n.AnswerBy = h.Question, h.Asked, h.AskUntil
	}
	if live && n.State == manifest.Running {
		n.Waiting, n.WaitingFiles, n.Conflict = h.Waiting, h.WaitingFiles, h.Conflict
	}
	return n
}

func number(id string) int {
	n, _ := strconv.Atoi(id[1:])
	return n
}
