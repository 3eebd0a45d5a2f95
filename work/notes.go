package work

import "github.com/claudopilot/claudopilot/state"

// PhaseNotes are the files the driver keeps in its state folder about
// phase id's worktree: the environment and attempt notes (guard.go), and
// the marks of a merge gate (GatingMark) and of a merge into the worktree
// (MergingMark) under way. A driver killed at the wrong moment leaves
// them; once the phase has landed none is of use.
func PhaseNotes(l state.Layout, id string) []string {
	return []string{noteIn(l, id, "environment"), noteIn(l, id, "attempt"), GatingMark(l, id), MergingMark(l, id)}
}
