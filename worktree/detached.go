package worktree

import (
	"context"
	"fmt"
)

// AddDetached checks out rev at path with a detached HEAD, on no branch
// (git worktree add --detach), for someone who must read a tree and not
// move any branch. Serialized with the other worktree operations.
func (c *Client) AddDetached(ctx context.Context, path, rev string) error {
	path = c.abs(path)
	c.locks().wt.Lock()
	defer c.locks().wt.Unlock()
	if _, err := c.run(ctx, "", nil, nil, "worktree", "prune"); err != nil {
		return fmt.Errorf("worktree add %s: %w", path, err)
	}
	if _, err := c.run(ctx, "", nil, nil, "worktree", "add", "--quiet", "--detach", path, rev); err != nil {
		return fmt.Errorf("worktree add %s: %w", path, err)
	}
	return nil
}
