package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"
)

// ClearStalePackedRefsLock removes the common dir's packed-refs.lock when
// a git that was killed mid-write (a driver's git under SIGKILL) left it:
// until then every branch deletion in the repository fails ("Unable to
// create packed-refs.lock: File exists"). A live git holds the lock for
// moments and has it open, so the lock is removed only when it outlives a
// short wait and no process has it open. It reports whether it removed it.
func (c *Client) ClearStalePackedRefsLock(ctx context.Context) (bool, error) {
	common, err := c.CommonDir(ctx)
	if err != nil {
		return false, err
	}
	lock := filepath.Join(common, "packed-refs.lock")
	deadline := time.Now().Add(3 * time.Second)
	for {
		if _, err := os.Stat(lock); errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(100 * time.Millisecond): // a live git lets go in moments
		}
	}
	open, err := openedByAny(lock)
	if err != nil || open {
		return false, err // cannot tell, or held: leave it (fail closed)
	}
	if err := os.Remove(lock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	return true, nil
}

// openedByAny reports whether any process has path open, from /proc.
func openedByAny(path string) (bool, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return false, err
	}
	for _, p := range procs {
		fds, err := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		if err != nil {
			continue // not a process, or not ours to read
		}
		for _, fd := range fds {
			if t, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); err == nil && t == path {
				return true, nil
			}
		}
	}
	return false, nil
}
