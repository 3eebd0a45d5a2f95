// Package scheduler owns a run's state. One loop goroutine launches
// eligible phases up to MAX_PARALLEL (critical path first), routes failures
// to the repair supervisor, parks or halts, and hands done phases to the
// merger one at a time, so merges are serial by construction. Workers, the
// merger and timers report to the loop over channels; nothing else changes
// phase state.
//
// The Runner and Merger interfaces are implemented over git and agent
// processes elsewhere; tests use fakes.
package scheduler
