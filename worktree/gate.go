package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// CleanCheckout makes the worktree at path hold exactly commit's tree,
// detached, and nothing else: no untracked or ignored file survives. A
// worktree already there is reused (git checkout -f --detach, git clean
// -ffdx): only the files that differ are written. One that is missing, or
// is not its own worktree any more (its .git link gone, so git would
// resolve to the repository around it), is made afresh, also when a
// killed `git worktree add` left it registered and locked. Serialized with
// the other worktree operations when it adds or removes.
func (c *Client) CleanCheckout(ctx context.Context, path, commit string) error {
	path = c.abs(path)
	if c.ownWorktree(ctx, path) {
		_, err := c.run(ctx, path, nil, nil, "checkout", "-q", "-f", "--detach", commit)
		if err == nil {
			_, err = c.run(ctx, path, nil, nil, "clean", "-q", "-ffdx")
		}
		if err == nil {
			return nil
		}
	}
	c.locks().wt.Lock()
	defer c.locks().wt.Unlock()
	if missing, _ := pathMissing(path); missing {
		// The run's first gate: git is asked to add, and only when it
		// refuses (a registration a kill left at path) are the
		// registrations listed, unlocked and pruned (two git processes
		// fewer per run, issue 25 §1).
		if _, err := c.run(ctx, "", nil, nil, "worktree", "add", "--quiet", "--detach", path, commit); err == nil {
			return nil
		}
	}
	return c.freshCheckout(ctx, path, commit)
}

// freshCheckout is CleanCheckout's checkout made afresh, for a caller that
// holds the worktree lock: whatever is at path (a folder, a registration,
// its lock) goes first.
func (c *Client) freshCheckout(ctx context.Context, path, commit string) error {
	if missing, _ := pathMissing(path); !missing {
		_, _ = c.run(ctx, "", nil, nil, "worktree", "remove", "--force", path)
		if err := os.RemoveAll(path); err != nil {
			return fmt.Errorf("clean checkout %s: %w", path, err)
		}
	}
	// A `git worktree add` killed with the driver leaves its worktree
	// locked ("initializing"): git neither prunes it nor adds over it.
	// The checkout is the driver's own, so its lock is a leftover.
	if err := c.unlockWorktree(ctx, path); err != nil {
		return fmt.Errorf("clean checkout %s: %w", path, err)
	}
	if _, err := c.run(ctx, "", nil, nil, "worktree", "prune"); err != nil {
		return fmt.Errorf("clean checkout %s: %w", path, err)
	}
	if _, err := c.run(ctx, "", nil, nil, "worktree", "add", "--quiet", "--detach", path, commit); err != nil {
		return fmt.Errorf("clean checkout %s: %w", path, err)
	}
	return nil
}

// ownWorktree reports whether git, run in path, works on the worktree at
// path itself: its top level is path and its git dir is not the main one.
// It reads the .git link and the admin folder as OwnGitDir does (a
// rev-parse per landing before, issue 25 §1); an admin folder with a
// config of its own (which could name another core.worktree) is asked of
// git.
func (c *Client) ownWorktree(ctx context.Context, path string) bool {
	gd, err := c.OwnGitDir(ctx, path)
	if err != nil {
		return false
	}
	if _, err := os.Lstat(filepath.Join(gd, "config.worktree")); errors.Is(err, fs.ErrNotExist) {
		return true
	}
	// One call for the three answers (top level, git dir, common dir).
	out, err := c.run(ctx, path, nil, nil, "rev-parse", "--path-format=absolute", "--show-toplevel", "--absolute-git-dir", "--git-common-dir")
	if err != nil {
		return false
	}
	f := strings.Split(trimNL(out), "\n")
	// A gate run in the sandbox could write the admin folder: one with a
	// link in it is made afresh, not checked out through.
	return len(f) == 3 && samePath(f[0], path) && !samePath(f[1], f[2]) && CheckAdmin(f[1]) == nil
}
