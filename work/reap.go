package work

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/state"
)

// ReapOptions says what Reap stops and how.
type ReapOptions struct {
	Journal string // the run journal: process groups started and not seen to end
	Layout  state.Layout
	Grace   time.Duration // SIGTERM→SIGKILL delay
	// Say reports each stop; nil: silent.
	Say func(string)
	// Kill stops one process group; nil: proc.KillGroup.
	Kill func(pgid int, grace time.Duration) error
}

// Reap stops what an earlier driver left running before any phase
// resumes: the agents whose process groups its journal names, when they
// still work in a phase worktree, and every process it started (its git,
// gates, agents, their daemons: they carry its mark) still working inside
// .claudopilot/. Only then may a lock there be taken for stale. It fails
// closed: when something cannot be stopped the error says what, and the
// run must not start (phases would resume beside it).
func Reap(o ReapOptions) error {
	kill := o.Kill
	if kill == nil {
		kill = proc.KillGroup
	}
	say := o.Say
	if say == nil {
		say = func(string) {}
	}
	recs, err := state.ReadJournal(o.Journal)
	if err != nil {
		return fmt.Errorf("read the journal to stop an earlier driver's agents: %w", err)
	}
	hist, _ := state.History(recs)
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(hist)) {
		for _, pgid := range hist[id].PGIDs {
			if !proc.GroupAlive(pgid) || !proc.InDir(pgid, o.Layout.Dir()) {
				continue
			}
			say(fmt.Sprintf("stopping agent of %s left by an earlier driver (process group %d)", id, pgid))
			if err := kill(pgid, o.Grace); err != nil {
				errs = append(errs, fmt.Errorf("stop the agent of %s left by an earlier driver (process group %d): %w", id, pgid, err))
			}
		}
	}
	pids, err := proc.LeftBehind(o.Layout.Dir())
	if errors.Is(err, proc.ErrNoProcs) {
		// Without /proc (macOS) processes cannot be found by their
		// mark; the journal's process groups above are all there is.
		pids, err = nil, nil
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("find processes an earlier driver left in %s: %w", o.Layout.Dir(), err))
	} else if len(pids) > 0 {
		say(fmt.Sprintf("stopping %d processes an earlier driver left working in %s (pids %v)", len(pids), o.Layout.Dir(), pids))
		if err := proc.Stop(pids, o.Grace); err != nil {
			errs = append(errs, fmt.Errorf("stop the processes an earlier driver left in %s: %w", o.Layout.Dir(), err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w; no phase resumes while they may still write in its worktree", err)
	}
	return nil
}
