package worktree

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The ref locks a killed git leaves (packed-refs.lock, HEAD.lock, a
// branch's lock under refs/) are removed; one a process holds open is not.
// The wait for a live git to let go is shortened: the product's 3 s
// (staleLockWait) held the package's slot for nothing, since these locks
// never go by themselves.
func TestClearStaleRefLocks(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	c.refLockWait = 200 * time.Millisecond
	ctx := context.Background()
	common, err := c.CommonDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(common, "refs", "heads", "auto"), 0o755); err != nil {
		t.Fatal(err)
	}
	var stale []string
	for _, name := range []string{"HEAD.lock", "packed-refs.lock", "refs/heads/auto/p1.lock", "refs/heads/main.lock"} {
		p := filepath.Join(common, name)
		if err := os.WriteFile(p, []byte("0000000000000000000000000000000000000000\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		stale = append(stale, p)
	}
	held, err := os.Create(filepath.Join(common, "refs", "heads", "held.lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	removed, err := c.ClearStaleRefLocks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(stale)
	if !slices.Equal(removed, stale) {
		t.Fatalf("removed %q, want %q", removed, stale)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", p, err)
		}
	}
	if _, err := os.Stat(held.Name()); err != nil {
		t.Fatalf("the held lock was removed: %v", err)
	}
	// The branch can be made now that its lock is gone.
	mustGit(t, c, "", "branch", "auto/p1")
}

// No lock: nothing to wait for.
func TestClearStaleRefLocksNone(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	removed, err := c.ClearStaleRefLocks(context.Background())
	if err != nil || len(removed) != 0 {
		t.Fatalf("removed %q, err %v", removed, err)
	}
}
