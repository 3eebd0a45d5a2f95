package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/claudopilot/claudopilot/internal/gittest"
)

// Fetches through one Client while worktrees are added through another of
// the same repository (WithEnv) all succeed: a fetch beside a half-written
// worktree HEAD fails with "bad object worktrees/<name>/HEAD", and two
// unrelated Clients would also run worktree adds in parallel. Each fetch
// brings a new commit, so git checks connectivity from every ref and
// worktree HEAD, which is when it reads the half-written one.
func TestFetchBesideWorktreeAdds(t *testing.T) {
	t.Parallel()
	// 16 rounds catch a missing lock in 5 runs of 6 here (a fetch of a
	// commit already present never did); CLAUDOPILOT_SOAK=1 runs 64.
	n := 16
	if os.Getenv("CLAUDOPILOT_SOAK") == "1" {
		n = 64
	}
	ctx := context.Background()
	c := newRepo(t)
	origin := filepath.Join(t.TempDir(), "origin.git")
	mustGit(t, c, "", "init", "-q", "--bare", "-b", "main", origin)
	mustGit(t, c, "", "push", "-q", origin, "main")
	mustGit(t, c, "", "remote", "add", "origin", origin)
	// n commits in a row on origin, branch fi at the i-th, none of them
	// here yet: one import (a clone, two processes a commit and a push
	// were 2n+2).
	commits := make([]gittest.Commit, n)
	for i := range commits {
		commits[i] = gittest.Commit{Ref: fmt.Sprint("f", i), From: fmt.Sprint(":", i), Message: fmt.Sprint("c", i)}
	}
	commits[0].From = "main^0"
	gittest.Import(t, testEnv(), origin, commits...)
	net := c.WithEnv(c.Env)

	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := 0; i < n; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := c.AddWorktree(ctx, filepath.Join(t.TempDir(), fmt.Sprintf("w%d", i)), fmt.Sprintf("b%d", i), "main"); err != nil {
				errs <- fmt.Errorf("add %d: %w", i, err)
			}
		}()
		go func() {
			defer wg.Done()
			if err := net.Fetch(ctx, "origin", fmt.Sprintf("+refs/heads/f%d:refs/remotes/origin/f%d", i, i)); err != nil {
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
