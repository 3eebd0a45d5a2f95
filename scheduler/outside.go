package scheduler

import (
	"context"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/state"
)

// Nodes from outside the manifest (the issues of a GitHub queue) are
// scheduled by the same loop as the manifest's phases: one slot pool, one
// journal, one supervisor policy, one progress. What differs is where they
// come from, where their state is kept (labels, not manifest lines), and
// how they land (a pull request merged on GitHub, not the local merge
// owner): a Source supplies all three.

// OutsideNode is one node a Source offers.
type OutsideNode struct {
	ID    string // "#12"; never a manifest phase id
	Title string
	Deps  []string // phase ids and ids of other outside nodes it waits on
	Owns  []string // declared scope; empty: anything
	Lane  string   // the lane it asks for ("lane:codex"); "" any
	Gate  string   // its gate; "" GATE_CMD
	// Resume is set for a node this driver (or its earlier run, killed)
	// already worked on: the first attempt resumes its branch.
	Resume bool
	// Retry is set when a human asked again for a node the driver parked
	// (relabelled it ready): it starts over with fresh counters.
	Retry bool
	// Away, when set, withdraws a node the driver works on: it left the
	// driver's hands meanwhile (an issue closed, transferred, or taken out
	// of the queue) and Away says why. Its agent is stopped, and it is
	// dropped (EvAway with that reason) once the agent is back; a node
	// between attempts is dropped at once. A landing under way is the
	// source's to end (it returns Away).
	Away string
	// Priority orders ready nodes before the critical path does: a node
	// of higher priority starts first (an issue of a campaign, 1, before
	// any other ready issue, 0).
	Priority int
	// Campaign is the campaign the node belongs to ("" none): the
	// page counts each campaign's progress by it (EvNode).
	Campaign string
	Work     OutsideWork
	// Answer, when set, answers the node's open question (a maintainer's
	// /answer comment on the issue) as the user's answer does
	// (Control.Answers): that question only, named by its time. The
	// node's other fields are not read.
	Answer *Answer
}

// OutsideWork tells the runner how an outside node's attempt differs from
// a phase's: its branch, where a new branch starts, its doc (written into
// the worktree, never committed), its prompt templates and its done rule
// (at least one commit beyond From, or beyond Job.Since for a repair).
type OutsideWork struct {
	Branch string // the node's branch, e.g. claudopilot/issue-12
	From   string // the ref a new branch starts from, e.g. refs/remotes/origin/main
	Base   string // the branch it lands on, as the prompt names it
	DocRel string // where the doc is written, relative to the worktree root
	Doc    []byte // the doc's content
	Prompt string // the prompt templates' prefix: "issue-" renders issue-worker.md
	Number int    // the number, for the templates
	URL    string // the page, for the templates
}

// Source supplies outside nodes and lands them. Nodes and Record are
// called from the loop: they must not block. Land blocks; the loop calls
// it from a goroutine of its own, for several nodes at once, and holds no
// agent slot while it runs (waiting on CI costs no agent).
type Source interface {
	// Nodes delivers the source's current nodes, the whole set, each time
	// it changes. A node that leaves the set while the driver works on it
	// stays until that work ends, unless the set names it with Away. The channel is closed when the source
	// will offer nothing more (a queue worked --once).
	Nodes() <-chan []OutsideNode
	// Land lands a done node. OK: merged. Reason ReasonChecks or
	// ReasonConflict with Commit set: red checks, or a base that no
	// longer merges, repaired by the supervisor (Commit is the head the
	// repair must go beyond); without Commit (checks pending for good)
	// the node is parked. Away: the node left the driver's hands (a
	// pull request handed to a human, an issue closed or claimed by
	// someone else). Any other Reason parks the node.
	Land(ctx context.Context, j MergeJob) MergeOutcome
	// Record hears every state the driver gives one of its nodes, with
	// why for a parked one; the source keeps its own record (labels,
	// comments) in step, off the loop.
	Record(id string, st manifest.State, n Note)
}

// Note says why a node got its state.
type Note struct {
	Reason  state.Reason
	Detail  string
	LogPath string
}
