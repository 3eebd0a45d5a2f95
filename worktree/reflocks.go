package worktree

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ClearStaleRefLocks removes the ref locks in the common dir that a git
// killed mid-write left: packed-refs.lock, HEAD.lock and any *.lock under
// refs/. The driver's git dies with a SIGKILLed driver (dieWithUs), so a
// kill during a merge's update-ref of the base, or a branch's creation or
// deletion, leaves the ref's lock; until it goes, every later update of
// that ref fails ("cannot lock ref ... File exists"), and a stale
// packed-refs.lock fails every branch deletion. A live git holds such a
// lock for moments, so a lock is removed only when the same file is still
// there after a short wait and no process has it open. It returns the
// locks it removed.
func (c *Client) ClearStaleRefLocks(ctx context.Context) ([]string, error) {
	common, err := c.CommonDir(ctx)
	if err != nil {
		return nil, err
	}
	found, err := refLocks(common)
	if err != nil || len(found) == 0 {
		return nil, err
	}
	first := make(map[string]os.FileInfo, len(found))
	for _, l := range found {
		if fi, err := os.Stat(l); err == nil {
			first[l] = fi
		}
	}
	wait := c.refLockWait
	if wait == 0 {
		wait = staleLockWait
	}
	deadline := time.Now().Add(wait)
	for len(first) > 0 && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond): // a live git lets go in moments
		}
		for l := range first {
			if _, err := os.Stat(l); errors.Is(err, os.ErrNotExist) {
				delete(first, l)
			}
		}
	}
	var removed []string
	for _, l := range slices.Sorted(maps.Keys(first)) {
		// Another git's lock of the same name since: not stale.
		if fi, err := os.Stat(l); err != nil || !os.SameFile(fi, first[l]) || !fi.ModTime().Equal(first[l].ModTime()) {
			continue
		}
		open, err := openedByAny(l)
		if err != nil {
			return removed, err // cannot tell: leave it (fail closed)
		}
		if open {
			continue
		}
		if err := os.Remove(l); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, err
		}
		removed = append(removed, l)
	}
	return removed, nil
}

// staleLockWait is how long a ref lock must stay, unopened, to be taken
// for a killed git's: a live git writes a ref's lock, closes it and
// renames it within moments.
const staleLockWait = 3 * time.Second

// refLocks lists the ref lock files in the common dir.
func refLocks(common string) ([]string, error) {
	var locks []string
	for _, name := range []string{"packed-refs.lock", "HEAD.lock"} {
		if _, err := os.Lstat(filepath.Join(common, name)); err == nil {
			locks = append(locks, filepath.Join(common, name))
		}
	}
	err := filepath.WalkDir(filepath.Join(common, "refs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile
			}
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".lock") {
			locks = append(locks, path)
		}
		return nil
	})
	return locks, err
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
