package scheduler

import (
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/state"
)

// View is what a pending phase's eligibility is decided on. The loop
// builds one over its own state; `explain` builds one over the manifest,
// the journal and the settings, and both ask Holds, so the two never
// disagree about a rule.
type View struct {
	Roadmap *roadmap.Roadmap
	// State is each phase's state.
	State func(*roadmap.Node) manifest.State
	// Held is true for a phase the driver holds (an agent or a merge
	// runs for it): its declared scope is taken.
	Held func(*roadmap.Node) bool
	// ExternalDone says whether a dep outside the manifest (an issue
	// "#12") is done; nil: none is.
	ExternalDone func(id string) bool
	// KeepGoing and IgnoreCheckpoints lift LOOP-CHECKPOINT markers.
	KeepGoing, IgnoreCheckpoints bool
	// Cooldown is when the rate-limit cooldown of a command ends; nil:
	// none. Cooldowns are keyed by the agent command (a worker and a
	// supervisor running one command share its quota).
	Cooldown func(cmd string) time.Time
	// Cmds are the worker commands the phase may run on (its lane and
	// the lane's fallbacks, or AGENT_CMD): it is held only when every
	// one of them cools down.
	Cmds func(*roadmap.Node) []string
	Now  time.Time
}

// HoldKind names one reason a pending phase does not start.
type HoldKind string

const (
	HoldDep        HoldKind = "dep"        // a dep in the manifest is not merged
	HoldExternal   HoldKind = "external"   // a dep outside the manifest is not done
	HoldScope      HoldKind = "scope"      // its owns: overlap a held phase's
	HoldCheckpoint HoldKind = "checkpoint" // it is below a LOOP-CHECKPOINT in force
	HoldCooldown   HoldKind = "cooldown"   // every command it may run on cools down
)

// Hold is one reason a pending phase does not start.
type Hold struct {
	Kind  HoldKind
	Node  *roadmap.Node // HoldDep: the dep; HoldScope: the held phase
	ID    string        // HoldExternal: the dep's id
	Line  int           // HoldCheckpoint: the marker's line
	Until time.Time     // HoldCooldown: when the first command is free
}

// Holds lists every reason the pending phase n does not start now, in the
// order deps, outside deps, scope, checkpoint, cooldown; none means it
// starts as soon as a slot is free.
func Holds(v View, n *roadmap.Node) []Hold {
	out := DepHolds(v, n)
	if q := ScopeConflict(v.Roadmap, n, v.Held); q != nil {
		out = append(out, Hold{Kind: HoldScope, Node: q})
	}
	if line := CheckpointLine(v.Roadmap, v.KeepGoing, v.IgnoreCheckpoints); line > 0 && n.Line > line {
		out = append(out, Hold{Kind: HoldCheckpoint, Line: line})
	}
	if v.Cooldown != nil && v.Cmds != nil {
		var first time.Time
		all := true
		for _, c := range v.Cmds(n) {
			until := v.Cooldown(c)
			if !until.After(v.Now) {
				all = false
				break
			}
			if first.IsZero() || until.Before(first) {
				first = until
			}
		}
		if all && !first.IsZero() {
			out = append(out, Hold{Kind: HoldCooldown, Until: first})
		}
	}
	return out
}

// DepHolds lists the deps, in the manifest or outside it, that hold n.
func DepHolds(v View, n *roadmap.Node) []Hold {
	var out []Hold
	for _, d := range v.Roadmap.Deps(n) {
		if v.State(d) != manifest.Merged {
			out = append(out, Hold{Kind: HoldDep, Node: d})
		}
	}
	for _, id := range n.External {
		if v.ExternalDone == nil || !v.ExternalDone(id) {
			out = append(out, Hold{Kind: HoldExternal, ID: id})
		}
	}
	return out
}

// ScopeConflict returns a held phase whose declared scope overlaps n's,
// or nil. Two phases with overlapping (owns: …) never run together;
// phases without owns: are not constrained.
func ScopeConflict(rm *roadmap.Roadmap, n *roadmap.Node, held func(*roadmap.Node) bool) *roadmap.Node {
	if len(n.Owns) == 0 {
		return nil
	}
	for _, q := range rm.Nodes {
		if q != n && len(q.Owns) > 0 && held(q) && roadmap.Overlap(n.Owns, q.Owns) {
			return q
		}
	}
	return nil
}

// CheckpointLine returns the line of the first LOOP-CHECKPOINT marker in
// force, or 0. Phases below it wait until a human removes it; KEEP_GOING
// and IGNORE_LOOP_CHECKPOINTS lift it.
func CheckpointLine(rm *roadmap.Roadmap, keepGoing, ignore bool) int {
	if keepGoing || ignore || len(rm.Manifest.Checkpoints) == 0 {
		return 0
	}
	return rm.Manifest.Checkpoints[0].Line
}

// Eligible lists the pending phases nothing holds in v, in manifest order:
// each starts as soon as a slot is free.
func Eligible(v View) []*roadmap.Node {
	var out []*roadmap.Node
	for _, n := range v.Roadmap.Nodes {
		if v.State(n) == manifest.Pending && len(Holds(v, n)) == 0 {
			out = append(out, n)
		}
	}
	return out
}

// FileView is the View outside the loop (status, explain): each phase's
// state is its manifest line's, a phase marked [running] holds its scope,
// and the rules (KEEP_GOING, IGNORE_LOOP_CHECKPOINTS, the lanes) and the
// cooldowns are the ones a run journaled. externalDone says which outside
// deps are done (nil: none).
func FileView(rm *roadmap.Roadmap, rules state.Rules, cool state.Cooldowns, externalDone func(string) bool, now time.Time) View {
	lanes := RuleLanes(rules)
	return View{
		Roadmap: rm, State: roadmap.FileState,
		Held:         func(n *roadmap.Node) bool { return n.State == manifest.Running },
		ExternalDone: externalDone,
		KeepGoing:    rules.KeepGoing, IgnoreCheckpoints: rules.IgnoreCheckpoints,
		Cooldown: func(cmd string) time.Time { return cool.For(cmd, state.Worker) },
		Cmds:     func(n *roadmap.Node) []string { return LaneCmds(lanes, n, state.Worker) },
		Now:      now,
	}
}

// RuleLanes are the lanes of journaled rules.
func RuleLanes(rules state.Rules) []Lane {
	var out []Lane
	for _, l := range rules.Lanes {
		out = append(out, Lane{ID: l.ID, Cmd: l.Cmd, SupervisorCmd: l.SupervisorCmd, Fallback: l.Fallback, Slots: l.Slots, Account: l.Account})
	}
	return out
}
