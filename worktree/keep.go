package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/claudopilot/claudopilot/atomicfile"
)

// Protect keeps the repository's config file, hooks/ and info/ as they are
// now, for the rest of the run (issue 21 §5). An agent without the sandbox
// planted a smudge/clean filter (with a committed .gitattributes),
// core.fsmonitor and a post-checkout hook, and the driver's own git ran
// each of them (the filter in the merge gate's reset --hard, fsmonitor 20
// times); the user's next git status ran fsmonitor too. From now on, before
// each git command of this Client (and of those made from it with
// WithEnv), a change there that is not the driver's own (git config, git
// branch, Exclude) is put back as it was, and recorded for Reverted. The
// check costs a few lstat calls when nothing changed. An agent still
// running can write between the check and git's read of the file: without
// the sandbox this narrows the window, it does not close it (hooks and
// fsmonitor are off whatever the config says: hardened).
func (c *Client) Protect(ctx context.Context) error {
	common, err := c.CommonDir(ctx)
	if err != nil {
		return fmt.Errorf("protect the repository's config: %w", err)
	}
	g := &guard{common: common}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.snapshot(); err != nil {
		return fmt.Errorf("protect the repository's config: %w", err)
	}
	c.locks().guard.Store(g)
	return nil
}

// Reverted lists the changes put back since since (checking once more
// first), oldest first.
func (c *Client) Reverted(since time.Time) []Reversion {
	g := c.locks().guard.Load()
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.check()
	var out []Reversion
	for _, r := range g.reverted {
		if !r.At.Before(since) {
			out = append(out, r)
		}
	}
	return out
}

// Reversion is one change to the repository's config, hooks or info/ that
// the driver put back.
type Reversion struct {
	Path string // absolute
	What string // "changed", "added" or "removed"
	At   time.Time
}

// guard is what Protect keeps.
type guard struct {
	mu       sync.Mutex
	common   string
	files    map[string]kept      // every file of config, hooks/ and info/
	stamps   map[string]fileStamp // the same files and the folders, as lstat saw them
	reverted []Reversion
}

type kept struct {
	data []byte
	mode fs.FileMode
}

type fileStamp struct {
	size  int64
	mtime time.Time
	mode  fs.FileMode
	ino   uint64
}

func stampOf(fi fs.FileInfo) fileStamp {
	return fileStamp{size: fi.Size(), mtime: fi.ModTime(), mode: fi.Mode(), ino: inode(fi)}
}

// roots are what the guard keeps, in the common directory.
func (g *guard) roots() []string {
	return []string{filepath.Join(g.common, "config"), filepath.Join(g.common, "hooks"), filepath.Join(g.common, "info")}
}

// read lists the files (with their content) and stamps of the roots now.
func (g *guard) read() (map[string]kept, map[string]fileStamp, error) {
	files, stamps := map[string]kept{}, map[string]fileStamp{}
	for _, root := range g.roots() {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			stamps[p] = stampOf(fi)
			if d.Type().IsRegular() {
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				files[p] = kept{data: b, mode: fi.Mode().Perm()}
			} else if !d.IsDir() {
				files[p] = kept{mode: fi.Mode()} // a link or a pipe: only its presence
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return files, stamps, nil
}

// snapshot takes the state now as the one to keep.
func (g *guard) snapshot() error {
	files, stamps, err := g.read()
	if err != nil {
		return err
	}
	g.files, g.stamps = files, stamps
	return nil
}

// same reports, from lstat alone, that nothing changed: every stamped
// path is as it was (a file added to a folder changes the folder's).
func (g *guard) same() bool {
	for p, st := range g.stamps {
		fi, err := os.Lstat(p)
		if err != nil || stampOf(fi) != st {
			return false
		}
	}
	for _, root := range g.roots() {
		if _, ok := g.stamps[root]; !ok {
			if _, err := os.Lstat(root); err == nil {
				return false // made since
			}
		}
	}
	return true
}

// check puts back what changed since the snapshot. Call with mu held.
func (g *guard) check() {
	if g.same() {
		return
	}
	now, _, err := g.read()
	if err != nil {
		now = map[string]kept{}
	}
	at := time.Now()
	var changed []Reversion
	for p, k := range now {
		old, ok := g.files[p]
		switch {
		case !ok:
			os.RemoveAll(p)
			changed = append(changed, Reversion{Path: p, What: "added", At: at})
		case old.mode != k.mode || !bytes.Equal(old.data, k.data):
			restore(p, old)
			changed = append(changed, Reversion{Path: p, What: "changed", At: at})
		}
	}
	for p, old := range g.files {
		if _, ok := now[p]; !ok {
			restore(p, old)
			changed = append(changed, Reversion{Path: p, What: "removed", At: at})
		}
	}
	sort.Slice(changed, func(i, j int) bool { return changed[i].Path < changed[j].Path })
	g.reverted = append(g.reverted, changed...)
	// The stamps of what was put back are new.
	if _, stamps, err := g.read(); err == nil {
		g.stamps = stamps
	}
}

// restore writes a kept file back in place of whatever is there (a link
// is replaced, never followed), with its kept mode. atomicfile's temp file
// is made exclusively, so a link an agent plants beside it is never
// written through. No fsync: the guard is the run's, and the next run
// snapshots what it finds (issue 25's fsync budget).
func restore(p string, k kept) {
	if fi, err := os.Lstat(p); !k.mode.IsRegular() || (err == nil && fi.IsDir()) {
		os.RemoveAll(p)
	}
	if !k.mode.IsRegular() {
		return // a link or pipe the user had: not made again
	}
	os.MkdirAll(filepath.Dir(p), 0o755)
	atomicfile.Write(p, k.data, k.mode.Perm(), atomicfile.Mode(), atomicfile.NoSync())
}

// guardFor is called before each git command: it puts back foreign
// changes. For a command that writes the config itself (git config, git
// branch, which drops a branch's section), the guard stays locked until
// the returned func runs, after the command, and takes its result as the
// state to keep.
func (c *Client) guardFor(args []string) func() {
	g := c.locks().guard.Load()
	if g == nil {
		return func() {}
	}
	g.mu.Lock()
	g.check()
	if len(args) == 0 || (args[0] != "config" && args[0] != "branch") {
		g.mu.Unlock()
		return func() {}
	}
	return func() {
		g.snapshot()
		g.mu.Unlock()
	}
}

// ownWrite runs write (the driver's own change to info/ or the config)
// with the guard locked, and keeps its result.
func (c *Client) ownWrite(write func() error) error {
	g := c.locks().guard.Load()
	if g == nil {
		return write()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.check()
	err := write()
	g.snapshot()
	return err
}
