package land

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
)

// pruneEvery bounds the landed worktrees whose registration git still
// holds: each admin folder keeps an index the size of the repository's.
const pruneEvery = 8

// dropped counts the landed worktrees removed since the last prune.
type dropped struct{ n atomic.Int32 }

// dropWorktree removes a landed phase's worktree folder itself, not by
// `git worktree remove` (one git process per landed phase, issue 25 §1):
// that command's work is the folder's deletion (with --force, whatever is
// in it) and the admin folder's. Git then lists the registration as
// prunable (the stray-write watch and the other listings skip those), and
// one `git worktree prune` drops the registrations of up to pruneEvery
// removals, the rest when the cleanups are waited for (Wait) and at the
// end-of-run sweep. A `worktree add` at the same path meets a stale
// registration only after a kill, and prunes and tries again
// (AddWorktree). Only git is asked which registrations are stale: the
// admin folders are writable by agents.
func (o *Owner) dropWorktree(ctx context.Context, id string) error {
	wt := o.Layout.Worktree(id)
	// RemoveAll removes a symbolic link, never what it points at.
	if err := os.RemoveAll(wt); err != nil {
		return fmt.Errorf("remove the worktree %s: %w", wt, err)
	}
	if o.drops.n.Add(1) >= pruneEvery {
		return o.pruneDropped(ctx)
	}
	return nil
}

// pruneDropped drops the registrations of the worktrees dropWorktree
// removed, if there are any.
func (o *Owner) pruneDropped(ctx context.Context) error {
	if o.drops.n.Swap(0) == 0 {
		return nil
	}
	return o.Git.Prune(ctx)
}
