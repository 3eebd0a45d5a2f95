package worktree

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// Fetches through one Client while worktrees are added through another of
// the same repository (WithEnv) all succeed: a fetch beside a half-written
// worktree HEAD fails with "bad object worktrees/<name>/HEAD", and two
// unrelated Clients would also run worktree adds in parallel.
func TestFetchBesideWorktreeAdds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	origin := filepath.Join(t.TempDir(), "origin.git")
	mustGit(t, c, "", "init", "-q", "--bare", "-b", "main", origin)
	mustGit(t, c, "", "push", "-q", origin, "main")
	mustGit(t, c, "", "remote", "add", "origin", origin)
	net := c.WithEnv(c.Env)

	var wg sync.WaitGroup
	errs := make(chan error, 128)
	for i := 0; i < 40; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := c.AddWorktree(ctx, filepath.Join(t.TempDir(), fmt.Sprintf("w%d", i)), fmt.Sprintf("b%d", i), "main"); err != nil {
				errs <- fmt.Errorf("add %d: %w", i, err)
			}
		}()
		go func() {
			defer wg.Done()
			if err := net.Fetch(ctx, "origin", "+refs/heads/main:refs/remotes/origin/main"); err != nil {
				errs <- fmt.Errorf("fetch %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
