package worktree

import "path/filepath"

// Known returns a Client for the work tree whose top level is top and
// whose git common directory is common (both absolute), without the one
// rev-parse Open runs: for a caller that made the repository itself and
// so knows both (a test's copy of a template repository, ~90 processes
// in package land's tests). Open checks what Known takes on trust; the
// driver opens the user's repository with Open.
func Known(top, common string, env []string) *Client {
	return &Client{Dir: filepath.Clean(top), Env: env, commonDir: filepath.Clean(common)}
}
