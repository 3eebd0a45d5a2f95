package work

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

// setAsideStacked keeps a phase's branch as stacked/<id>-<time> and
// removes its worktree, so that the phase starts over (Job.Fresh): it was
// stacked on a dep that then failed, and its branch holds that dep's
// commits, which must never land through it. Uncommitted work of the
// stopped attempt is committed on the kept branch first, where it can.
func (r *Runner) setAsideStacked(ctx context.Context, j scheduler.Job, wt, branch string) error {
	if _, err := os.Lstat(filepath.Join(wt, ".git")); err == nil {
		// Best effort: a worktree mid-merge cannot commit, and its
		// committed work is kept either way.
		_, _ = r.Git.CommitAll(ctx, wt, "claudopilot: uncommitted work of a stopped stacked attempt")
		if err := r.Git.RemoveWorktree(ctx, wt); err != nil {
			return fmt.Errorf("set aside the worktree of %s: %w", j.ID, err)
		}
	}
	exists, err := r.Git.BranchExists(ctx, branch)
	if err != nil || !exists {
		return err
	}
	aside := fmt.Sprintf("stacked/%s-%d", state.SafeName(j.ID), r.now().UnixNano())
	if _, err := r.Git.Git(ctx, "branch", "-m", branch, aside); err != nil {
		return fmt.Errorf("set aside the branch of %s: %w", j.ID, err)
	}
	return nil
}

// startOf is the commit a new branch for j starts from: the base, or the
// dep's tip it is stacked on.
func (r *Runner) startOf(ctx context.Context, j scheduler.Job, t target) (string, error) {
	if j.StackOn != "" {
		c, err := r.Git.RevParse(ctx, j.StackOn+"^{commit}")
		if err != nil {
			return "", fmt.Errorf("the tip %s to stack %s on: %w", j.StackOn, j.ID, err)
		}
		return c, nil
	}
	c, err := r.Git.RevParse(ctx, t.from)
	if err != nil {
		return "", fmt.Errorf("base %s: %w", t.from, err)
	}
	return c, nil
}

// startsOver tells whether j sets the phase's branch aside first: asked to
// (Fresh), or stacked on a dep tip the base does not hold now that the dep
// landed (StackedOn): the dep's branch was rewritten, and its old commits
// must not land through this one.
func (r *Runner) startsOver(ctx context.Context, j scheduler.Job, t target) (bool, error) {
	if j.Fresh || j.StackedOn == "" {
		return j.Fresh, nil
	}
	in, err := r.Git.IsAncestor(ctx, j.StackedOn, t.from)
	if err != nil {
		// A tip git no longer has is in no base.
		if _, rerr := r.Git.RevParse(ctx, j.StackedOn+"^{commit}"); rerr != nil {
			return true, nil
		}
		return false, err
	}
	return !in, nil
}
