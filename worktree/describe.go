package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// BranchDescription returns branch.<name>.description, the text `git
// branch --edit-description` keeps (and `git format-patch --cover-letter`
// shows); "" when the branch has none.
func (c *Client) BranchDescription(ctx context.Context, branch string) (string, error) {
	branch = strings.TrimPrefix(branch, "refs/heads/")
	if !c.mayDescribe(ctx) {
		return "", nil
	}
	out, err := c.run(ctx, "", nil, nil, "config", "--get", "branch."+branch+".description")
	if exitCode(err) == 1 {
		return "", nil // unset
	}
	if err != nil {
		return "", fmt.Errorf("read the description of %s: %w", branch, err)
	}
	return strings.TrimRight(string(out), "\n"), nil
}

// AppendBranchDescription adds line to the description of branch, keeping
// what is there (a person's own words included). The repository's config
// file takes one writer at a time: the driver's writers are serialized
// here, and a writer outside it (an agent's `git config`) is waited out
// with a few short retries.
func (c *Client) AppendBranchDescription(ctx context.Context, branch, line string) error {
	branch = strings.TrimPrefix(branch, "refs/heads/")
	if branch == "" || strings.HasPrefix(branch, "-") || strings.ContainsAny(line, "\n\r") {
		return fmt.Errorf("describe branch %q: invalid branch or line", branch)
	}
	c.locks().cfg.Lock()
	defer c.locks().cfg.Unlock()
	var err error
	for try := range 5 {
		if try > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(try*try) * 20 * time.Millisecond):
			}
		}
		var old string
		if old, err = c.BranchDescription(ctx, branch); err != nil {
			continue
		}
		desc := line
		if old != "" {
			desc = old + "\n" + line
		}
		if _, err = c.run(ctx, "", nil, nil, "config", "branch."+branch+".description", desc+"\n"); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("describe branch %s: %w", branch, err)
}

// mayDescribe is false when the repository's config files name no
// description and include no other file: no branch of it has a
// description there, and git need not be asked (one process per landing,
// issue 25 §1; with LANES every branch has one, and git is asked). A
// description in the user's own config is not looked for.
func (c *Client) mayDescribe(ctx context.Context) bool {
	common, err := c.CommonDir(ctx)
	if err != nil {
		return true
	}
	for _, name := range []string{"config", "config.worktree"} {
		b, err := os.ReadFile(filepath.Join(common, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		low := bytes.ToLower(b)
		if err != nil || bytes.Contains(low, []byte("description")) || bytes.Contains(low, []byte("include")) {
			return true
		}
	}
	return false
}
