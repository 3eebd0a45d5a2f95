package worktree

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Another process's index.lock is waited for, not failed on: an IDE's
// `git status` loop holds it for milliseconds at a time.
func TestLockIndexWaitsForAHeldLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	lock := filepath.Join(c.Dir, ".git", "index.lock")
	writeFile(t, c.Dir, ".git/index.lock", "an IDE's\n")

	if _, err := c.LockIndex(ctx, "", time.Millisecond); !errors.Is(err, ErrIndexLocked) {
		t.Fatalf("LockIndex past its wait = %v, want ErrIndexLocked", err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := c.LockIndex(ctx, "", time.Hour)
		if err == nil {
			err = l.Release()
		}
		got <- err
	}()
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("LockIndex never took the lock after it was freed")
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Errorf("index.lock left after Release: %v", err)
	}
}

// Under the lock the files move at once and the index in one rename at
// Release; meanwhile no other git can write the index.
func TestIndexLockAdvance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	oldSHA, newSHA := mergeSetup(t, c, nil)
	writeFile(t, c.Dir, "MANIFEST.md", "- [x] task\n- [ ] a human's line\n")
	moveMain(t, c, oldSHA, newSHA)
	l, err := c.LockIndex(ctx, "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GitIn(ctx, "", "add", "README.md"); err == nil {
		t.Error("git add succeeded while the index was locked")
	}
	if err := l.Advance(ctx, oldSHA, newSHA, []string{"MANIFEST.md"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, c.Dir, "new/c.txt"); got != "c\n" {
		t.Errorf("new/c.txt = %q", got)
	}
	if st := mustGit(t, c, "", "status", "--porcelain"); st != " M MANIFEST.md" {
		t.Errorf("status after the advance:\n%s", st)
	}
	if ok, err := c.ClearOwnIndexLock(ctx, ""); ok || err != nil {
		t.Errorf("ClearOwnIndexLock with no lock = %v, %v", ok, err)
	}
}

// A lock on the private copy of the index that a killed driver's git left
// behind does not stop the next move (TestCrashResume met it: "Unable to
// create index.claudopilot.lock: File exists").
func TestIndexLockAdvanceAfterAKilledGit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	oldSHA, newSHA := mergeSetup(t, c, nil)
	moveMain(t, c, oldSHA, newSHA)
	writeFile(t, c.Dir, ".git/index.claudopilot.lock", "")
	l, err := c.LockIndex(ctx, "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Advance(ctx, oldSHA, newSHA, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, c.Dir, "new/c.txt"); got != "c\n" {
		t.Errorf("new/c.txt = %q", got)
	}
}

// A driver killed at any instant leaves no index.lock or one it can tell
// as its own at the next start (ClearOwnIndexLock). Taking the lock by
// creating the file and then writing the mark left it empty when the kill
// came between the two: the restarted driver then waited for it forever
// as another git's (the CI's soak run, TestCrashResumeStacked at 15:08 on
// 2026-12-05). A reader looking as fast as it can while the lock is taken
// and freed again and again must never find it without the mark.
func TestIndexLockNeverSeenWithoutItsMark(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	lock := filepath.Join(c.Dir, ".git", "index.lock")
	done := make(chan struct{})
	seen := make(chan int, 1)
	go func() {
		unmarked := 0
		for {
			select {
			case <-done:
				seen <- unmarked
				return
			default:
			}
			if b, err := os.ReadFile(lock); err == nil && !bytes.HasPrefix(b, []byte(lockMark)) {
				unmarked++
			}
		}
	}()
	for range 300 {
		l, err := c.LockIndex(ctx, "", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if n := <-seen; n > 0 {
		t.Errorf("index.lock was seen %d times without the mark: a driver killed then would leave a lock nobody removes", n)
	}
}
