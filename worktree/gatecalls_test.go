package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The run's first merge gate adds its checkout with one git worktree add,
// without listing, unlocking or pruning the registrations first (issue 25
// §1): those run only when the add is refused (TestCleanCheckoutAfterAKilledAdd).
func TestCleanCheckoutFreshAddsOnly(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	ctx := context.Background()
	head := strings.TrimSpace(mustGit(t, c, "", "rev-parse", "HEAD"))
	gate := filepath.Join(c.Dir, ".claudopilot", "gate")
	trace := filepath.Join(t.TempDir(), "trace")
	if err := c.WithEnv(append(testEnv(), "GIT_TRACE="+trace)).CleanCheckout(ctx, gate, head); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(trace)
	var wt []string
	for _, l := range strings.Split(string(b), "\n") {
		if _, cmd, ok := strings.Cut(l, "trace: built-in: git "); ok && strings.HasPrefix(cmd, "worktree") {
			wt = append(wt, cmd)
		}
	}
	if len(wt) != 1 || !strings.HasPrefix(wt[0], "worktree add") {
		t.Errorf("worktree processes, want one add:\n%s", strings.Join(wt, "\n"))
	}
	if _, err := os.Stat(filepath.Join(gate, "README.md")); err != nil {
		t.Fatalf("the checkout lacks README.md: %v", err)
	}
	if !c.ownWorktree(ctx, gate) {
		t.Fatal("the gate is not its own worktree")
	}
}
