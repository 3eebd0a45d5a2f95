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
	t.Parallel()
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

// The merge gate's check that its checkout is a worktree of its own reads
// the .git link and the admin folder, as OwnGitDir does, instead of a
// rev-parse per landing (issue 25 §1); it still refuses a checkout whose
// link names the main repository, or whose admin folder holds a link.
func TestOwnWorktreeReadsFiles(t *testing.T) {
	c := newRepo(t)
	ctx := context.Background()
	gate := filepath.Join(c.Dir, ".claudopilot", "gate")
	mustGit(t, c, "", "worktree", "add", "-q", "--detach", gate, "HEAD")
	if _, err := c.CommonDir(ctx); err != nil { // read once, as a run does
		t.Fatal(err)
	}
	trace := filepath.Join(t.TempDir(), "trace")
	traced := c.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	if !traced.ownWorktree(ctx, gate) {
		t.Fatal("the gate is not its own worktree")
	}
	if b, _ := os.ReadFile(trace); strings.Contains(string(b), "built-in: git") {
		t.Errorf("git asked:\n%s", b)
	}
	gd := strings.TrimSpace(mustGit(t, c, gate, "rev-parse", "--absolute-git-dir"))
	// An admin folder with a link in it (a sandboxed gate can write it).
	if err := os.Symlink(filepath.Join(c.Dir, ".git", "config"), filepath.Join(gd, "logs-link")); err != nil {
		t.Fatal(err)
	}
	if c.ownWorktree(ctx, gate) {
		t.Error("a gate whose admin folder holds a link counts as its own worktree")
	}
	if err := os.Remove(filepath.Join(gd, "logs-link")); err != nil {
		t.Fatal(err)
	}
	// A link that names the main repository's git dir.
	if err := os.WriteFile(filepath.Join(gate, ".git"), []byte("gitdir: "+filepath.Join(c.Dir, ".git")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c.ownWorktree(ctx, gate) {
		t.Error("a gate whose .git names the main repository counts as its own worktree")
	}
}
