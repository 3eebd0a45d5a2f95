package worktree

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A packed-refs.lock a killed git left is removed; one a process holds
// open is not.
func TestClearStalePackedRefsLock(t *testing.T) {
	c := newRepo(t)
	ctx := context.Background()
	common, err := c.CommonDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(common, "packed-refs.lock")
	held, err := os.Create(lock)
	if err != nil {
		t.Fatal(err)
	}
	if removed, err := c.ClearStalePackedRefsLock(ctx); err != nil || removed {
		t.Fatalf("a held lock: removed %v, err %v", removed, err)
	}
	held.Close()
	if removed, err := c.ClearStalePackedRefsLock(ctx); err != nil || !removed {
		t.Fatalf("a stale lock: removed %v, err %v", removed, err)
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Fatalf("the lock is still there: %v", err)
	}
}
