package land

import (
	"context"
	"time"

	"github.com/claudopilot/claudopilot/scheduler"
)

// Unexported checks, for tests that feed them what a repository in trouble
// gives.
var (
	OutOfScope = (*Owner).outOfScope
	Markers    = (*Owner).markers
	Check      = (*Owner).checkBranch
)

// Changes is the paths check reads for j's branch: its one diff's.
func Changes(o *Owner, ctx context.Context, j scheduler.MergeJob, mb, tip string) ([]string, error) {
	ch, err := o.Git.BranchChanges(ctx, mb, tip)
	return ch.Paths, err
}

// OwnMove moves the base ref to sha as the merge owner does, with ok the
// success the owner saw (false: the update-ref reported an error).
func OwnMove(o *Owner, move func(), sha string, ok bool) {
	o.base.writing(sha)
	move()
	o.base.wrote(sha, ok)
}

// HoldBaseRead calls hold with every value CheckBase reads, between its
// read and its judgement of it.
func HoldBaseRead(o *Owner, hold func(string)) { o.baseRead = hold }

// Flip is the manifest flip a landing commits and writes to the live file.
var Flip = flip

// ScanCheck is the secret scan with the checks on what a merge changes.
var ScanCheck = (*Owner).scan

// WaitCleanups waits for the background cleanups of landed phases, as
// Wait does, without Wait's prune of the registrations they left (one git
// process a landing in the tests that do not look at the registrations).
func WaitCleanups(o *Owner) { o.cleaning.Wait() }

// SetAttempts bounds how often one Merge rebuilds a merge because the
// base moved under it (the constant attempts otherwise).
func SetAttempts(o *Owner, n int) { o.tries = n }

// SetDebounce sets the watch's wait after a change (watchDebounce, a
// second, otherwise): a test of what wakes the watch need not wait a
// second for each wake-up.
func SetDebounce(o *Owner, d time.Duration) { o.debounce = d }
