package worktree

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A `git worktree add` killed between creating its admin folder's
// commondir and writing it leaves the file empty, and then git dies in
// every command that reads the worktrees: list, add, branch -D. Each such
// command is made again once the file is mended, and nothing else of the
// admin folder is touched.
func TestEmptyCommondirIsMended(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	w1 := filepath.Join(t.TempDir(), "w1")
	if err := c.AddWorktree(ctx, w1, "w1", ""); err != nil {
		t.Fatal(err)
	}
	common, err := c.CommonDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cd := filepath.Join(common, "worktrees", "w1", "commondir")
	empty := func() {
		t.Helper()
		if err := os.WriteFile(cd, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	empty()
	wts, err := c.Worktrees(ctx)
	if err != nil || len(wts) != 2 {
		t.Fatalf("Worktrees = %v, %v; want the main one and w1", wts, err)
	}
	if b, _ := os.ReadFile(cd); string(b) != "../..\n" {
		t.Errorf("commondir = %q, want ../..", b)
	}
	empty()
	if err := c.AddWorktree(ctx, filepath.Join(t.TempDir(), "w2"), "w2", ""); err != nil {
		t.Fatalf("add with another worktree's commondir empty: %v", err)
	}
}

// A commondir that is a symbolic link is never written through (an agent
// can write its own admin folder).
func TestCommondirLinkIsNotFollowed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	w1 := filepath.Join(t.TempDir(), "w1")
	if err := c.AddWorktree(ctx, w1, "w1", ""); err != nil {
		t.Fatal(err)
	}
	common, err := c.CommonDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cd := filepath.Join(common, "worktrees", "w1", "commondir")
	if err := os.Remove(cd); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, cd); err != nil {
		t.Fatal(err)
	}
	_, _ = c.Worktrees(ctx)
	if b, _ := os.ReadFile(target); len(b) != 0 {
		t.Errorf("the link's target was written: %q", b)
	}
}
