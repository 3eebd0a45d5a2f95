package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/claudopilot/claudopilot/atomicfile"
)

// ErrIndexLocked is returned by LockIndex when another process held the
// worktree's index.lock for the whole wait.
var ErrIndexLocked = errors.New("index.lock is held by another process")

// lockMark starts the bytes of an index.lock this package holds, so a
// driver restarted after a crash can tell its own stale lock from an
// IDE's. git never reads an index.lock's content: it only renames it.
const lockMark = "claudopilot index lock\n"

// IndexLock holds a worktree's index.lock the way git does while it writes
// the index: no other git can change that index (a human's `git commit`
// in it fails and can be run again) until Release. While it is held,
// Advance moves the checkout through a private copy of the index, which
// Release puts in place in one rename.
type IndexLock struct {
	c     *Client
	dir   string // the worktree
	index string // its index file
	lock  string // index.lock
	tmp   string // the private copy Advance writes
	moved bool   // Advance completed: Release installs tmp
}

// LockIndex takes worktree dir's index.lock. A lock held by someone else
// is waited for, up to wait: an IDE running `git status` in a loop holds
// it for milliseconds at a time. Past wait the error is ErrIndexLocked,
// naming the file (a git killed while it held the lock leaves it for good).
func (c *Client) LockIndex(ctx context.Context, dir string, wait time.Duration) (*IndexLock, error) {
	gd, err := c.GitDir(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("lock the index of %s: %w", c.abs(dir), err)
	}
	l := &IndexLock{c: c, dir: dir, index: filepath.Join(gd, "index")}
	l.lock = l.index + ".lock"
	l.tmp = l.index + ".claudopilot"
	deadline := time.Now().Add(wait)
	delay := 5 * time.Millisecond
	for {
		// The lock appears with its mark in one step: a driver killed at
		// any instant leaves no lock or one ClearOwnIndexLock knows.
		err := atomicfile.CreateWhole(l.lock, filepath.Join(gd, "index.claudopilot-mark"), []byte(lockMark))
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock the index of %s: %w", c.abs(dir), err)
		}
		if !time.Now().Before(deadline) {
			return nil, fmt.Errorf("%w: %s", ErrIndexLocked, l.lock)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		delay = min(delay*2, 200*time.Millisecond)
	}
}

// Advance is AdvanceCheckout under the lock: the files on disk move at
// once, the index moves at Release.
func (l *IndexLock) Advance(ctx context.Context, oldSHA, newSHA string, skip []string) error {
	return l.AdvanceDiff(ctx, oldSHA, newSHA, skip, nil)
}

// AdvanceDiff is Advance with the difference of the two commits already
// read (WouldOverwriteDiff); nil reads it.
func (l *IndexLock) AdvanceDiff(ctx context.Context, oldSHA, newSHA string, skip []string, d *TreeDiff) error {
	// A git of a killed driver, working on the private copy, leaves its
	// lock behind, and every later move would fail on it. Holding
	// index.lock, and with the driver lock keeping other drivers out,
	// nobody else can be writing the copy now.
	if err := os.Remove(l.tmp + ".lock"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("advance checkout %s: %w", l.c.abs(l.dir), err)
	}
	if err := copyFile(l.index, l.tmp); err != nil {
		return fmt.Errorf("advance checkout %s: copy the index: %w", l.c.abs(l.dir), err)
	}
	if err := l.c.advanceCheckout(ctx, l.dir, oldSHA, newSHA, skip, []string{"GIT_INDEX_FILE=" + l.tmp}, d); err != nil {
		return fmt.Errorf("advance checkout %s %s..%s: %w", l.c.abs(l.dir), short(oldSHA), short(newSHA), err)
	}
	l.moved = true
	return nil
}

// Release installs the index Advance wrote, if it completed, and frees the
// lock. An index whose move did not complete stays as it was: the files
// already written are written again by the next Advance.
func (l *IndexLock) Release() error {
	var err error
	if l.moved {
		err = os.Rename(l.tmp, l.index)
	}
	os.Remove(l.tmp)
	if rerr := os.Remove(l.lock); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}

// ClearOwnIndexLock removes worktree dir's index.lock if this package
// left it (a driver killed while it held the lock), and reports whether
// one was removed. Call it only when no other driver can be running.
func (c *Client) ClearOwnIndexLock(ctx context.Context, dir string) (bool, error) {
	gd, err := c.GitDir(ctx, dir)
	if err != nil {
		return false, err
	}
	lock := filepath.Join(gd, "index.lock")
	b, err := os.ReadFile(lock)
	if err != nil || !bytes.HasPrefix(b, []byte(lockMark)) {
		return false, nil
	}
	os.Remove(filepath.Join(gd, "index.claudopilot"))
	os.Remove(filepath.Join(gd, "index.claudopilot-mark"))
	return true, os.Remove(lock)
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if errors.Is(err, fs.ErrNotExist) {
		// No index yet: git reads a missing one as empty.
		os.Remove(to)
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
