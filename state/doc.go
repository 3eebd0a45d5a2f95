// Package state holds what a run leaves on disk and how it is read back:
// the layout (where a run keeps things: the driver's folder, worktrees,
// branches, logs, the state folder), the journal (every attempt, outcome,
// cooldown and merge, and History, which folds it into per-phase
// counters), and the repository's driver lock. It knows nothing about the
// loop: the scheduler writes the journal, and status, explain, logs,
// retry and the reaper read it, all through this one package.
package state
