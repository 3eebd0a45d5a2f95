package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/claudopilot/claudopilot/worktree"
)

// Watch finds writes outside a worktree while attempts run without the
// sandbox: files of the base checkout, and of other phases' worktrees in
// which nothing else ran meanwhile, that changed while an attempt ran.
// Nothing can attribute such a change (a human may have saved the file),
// so it is only reported. One Watch serves all the attempts of a run; the
// zero value is ready.
type Watch struct {
	mu     sync.Mutex
	active map[string]int       // phase worktree → attempts running in it
	ended  map[string]time.Time // phase worktree → when its last attempt ended
}

// stamp tells a file's states apart; a missing file has the zero stamp.
type stamp struct {
	size  int64
	mtime time.Time
	mode  os.FileMode
}

// Snapshot is what Begin saw.
type Snapshot struct {
	wt    string
	start time.Time
	dirs  []string         // the checkouts Begin looked at (none another attempt ran in)
	files map[string]stamp // absolute path → stamp, for every file git status listed
}

// Begin records the dirty and untracked files of the base checkout top and
// of the phase and issue worktrees beside wt (the worktrees in
// top/.claudopilot/worktrees on a branch) as an attempt in wt starts.
func (w *Watch) Begin(ctx context.Context, git *worktree.Client, top, wt string) *Snapshot {
	w.mu.Lock()
	if w.active == nil {
		w.active, w.ended = map[string]int{}, map[string]time.Time{}
	}
	w.active[wt]++
	w.mu.Unlock()
	s := &Snapshot{wt: wt, start: time.Now(), files: map[string]stamp{}}
	for _, dir := range watched(ctx, git, top, wt) {
		if dir != top && w.busy(dir, s.start) {
			// An attempt runs there now: End leaves it out whatever
			// happens (its own agent changes it), so it is not looked
			// at either. At MAX_PARALLEL n every attempt looked at the
			// n-1 others twice: n² statuses (issue 25 §1).
			continue
		}
		s.dirs = append(s.dirs, dir)
		for _, p := range dirty(ctx, git, dir) {
			s.files[p] = stampOf(p)
		}
	}
	return s
}

// End names the files that appeared in git status, or changed, since Begin
// (skip: paths the driver itself writes, like the manifest). Worktrees in
// which another attempt ran meanwhile are left out: their own agent
// changed them. It looks at the checkouts Begin listed, without listing
// them again: a worktree made since is made for an attempt of its own.
// One removed since is left out, as git would no longer list it.
func (w *Watch) End(ctx context.Context, git *worktree.Client, top string, s *Snapshot, skip ...string) []string {
	var changed []string
	skipped := map[string]bool{}
	for _, p := range skip {
		skipped[p] = true
	}
	for _, dir := range s.dirs {
		if dir != top && w.busy(dir, s.start) {
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, ".git")); dir != top && err != nil {
			// Removed since Begin (a landed phase's, whose removal was
			// under way): git would no longer list it, and a status
			// there can only fail.
			continue
		}
		for _, p := range dirty(ctx, git, dir) {
			if skipped[p] {
				continue
			}
			if before, ok := s.files[p]; !ok || before != stampOf(p) {
				changed = append(changed, p)
			}
		}
	}
	w.mu.Lock()
	w.active[s.wt]--
	w.ended[s.wt] = time.Now()
	w.mu.Unlock()
	sort.Strings(changed)
	return changed
}

// busy reports whether an attempt ran in the worktree dir since start.
func (w *Watch) busy(dir string, start time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.active[dir] > 0 || w.ended[dir].After(start)
}

// watched lists the base checkout and the phase worktrees other than wt.
func watched(ctx context.Context, git *worktree.Client, top, wt string) []string {
	dirs := []string{top}
	wts, err := git.Worktrees(ctx)
	if err != nil {
		return dirs
	}
	root := filepath.Join(top, ".claudopilot", "worktrees")
	for _, t := range wts {
		// Phase and issue worktrees are on a branch; the driver's own
		// checkouts there (a merge gate's) are detached.
		if t.Prunable || filepath.Dir(t.Path) != root || t.Path == wt || t.Branch == "" {
			continue
		}
		dirs = append(dirs, t.Path)
	}
	return dirs
}

// dirty lists the modified and untracked files of the checkout dir as
// absolute paths (ignored files are not listed). --no-optional-locks: the
// look must not take the index lock from the user or the driver.
func dirty(ctx context.Context, git *worktree.Client, dir string) []string {
	rel, err := git.ChangedPaths(ctx, dir)
	if err != nil {
		return nil
	}
	var paths []string
	for _, p := range rel {
		paths = append(paths, filepath.Join(dir, filepath.FromSlash(p)))
	}
	return paths
}

func stampOf(p string) stamp {
	fi, err := os.Lstat(p)
	if err != nil {
		return stamp{}
	}
	return stamp{size: fi.Size(), mtime: fi.ModTime(), mode: fi.Mode()}
}

// StrayWarning is the warning for one file Watch found.
func StrayWarning(p string) string {
	return fmt.Sprintf("outside its worktree: %s changed while the attempt ran (no sandbox to tell who; SANDBOX=bwrap prevents it, docs/sandbox.md)", p)
}

// RevertWarning is the warning for a change to the repository's config,
// hooks or info/ that the driver put back (worktree.Client.Protect).
func RevertWarning(path, what string) string {
	return fmt.Sprintf("outside its worktree: %s %s while the attempt ran: put back as it was when the run started (the driver's git runs no hook or fsmonitor, and no filter or helper an agent configured; SANDBOX=bwrap prevents it, docs/sandbox.md)", path, what)
}
