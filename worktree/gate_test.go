package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A driver killed during the gate checkout's `git worktree add` leaves the
// worktree registered and locked ("initializing"): its folder missing, or
// there but not yet a worktree. git never prunes a locked worktree and
// refuses to add one over it ("is a missing but locked worktree"), so every
// later merge gate failed (TestCrashResumeStacked, two suites at once).
func TestCleanCheckoutAfterAKilledAdd(t *testing.T) {
	for _, tc := range []struct {
		name string
		left func(t *testing.T, path string)
	}{
		{"folder missing", func(t *testing.T, path string) {
			if err := os.RemoveAll(path); err != nil {
				t.Fatal(err)
			}
		}},
		{"folder without its .git", func(t *testing.T, path string) {
			if err := os.Remove(filepath.Join(path, ".git")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newRepo(t)
			ctx := context.Background()
			head := mustGit(t, c, "", "rev-parse", "HEAD")
			gate := filepath.Join(c.Dir, ".claudopilot", "gate")
			mustGit(t, c, "", "worktree", "add", "-q", "--no-checkout", "--detach", gate, "HEAD")
			mustGit(t, c, "", "worktree", "lock", "--reason", "initializing", gate)
			tc.left(t, gate)
			if err := c.CleanCheckout(ctx, gate, strings.TrimSpace(head)); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(gate, "README.md")); err != nil {
				t.Fatalf("the checkout lacks README.md: %v", err)
			}
			if !c.ownWorktree(ctx, gate) {
				t.Fatal("the gate is not its own worktree")
			}
		})
	}
}
