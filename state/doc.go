// Package state says where a run keeps its things (Layout: the driver's
// folder, worktrees, branches, logs, the state folder and the journal's
// path) and holds the repository's driver lock. It knows nothing about the
// loop: the scheduler, the runner, the landing and the commands all read
// the one layout from here.
package state
