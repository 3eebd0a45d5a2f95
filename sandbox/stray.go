package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/claudopilot/claudopilot/internal/tempdir"
	"github.com/claudopilot/claudopilot/worktree"
)

// Watch finds writes outside a worktree while attempts run without the
// sandbox: files of the base checkout, and of other phases' worktrees in
// which nothing else ran meanwhile, that changed while an attempt ran.
// Nothing can attribute such a change (a human may have saved the file),
// so it is only reported. One Watch serves all the attempts of a run; the
// zero value is ready.
//
// While attempts run, one inotify instance watches those checkouts,
// folder by folder (issue 25 §1: a git status of each of them at every
// attempt's start and end grew with MAX_PARALLEL × the worktrees waiting
// to land). An attempt's end runs git status only on the checkouts where
// something changed since its start, and reports the files git lists
// that changed: an ignored or build file, or the base checkout moved by a
// landing, is not reported. When the watch cannot be set up (inotify's
// limits), the checkout gets a git status at the start and the end as
// before, and the log says so once; when events were lost, every file git
// lists that changed since the start counts. The check is never skipped.
type Watch struct {
	mu     sync.Mutex
	active map[string]int       // phase worktree → attempts running in it
	ended  map[string]time.Time // phase worktree → when its last attempt ended
	n      *notifier            // while attempts run; nil: none run, or no inotify
	users  map[*Snapshot]bool   // the attempts using n
	log    io.Writer
	warned bool
	swept  bool // TMPDIR's claudopilot-watch-* of earlier versions
	limit  int  // most folder watches (tests); 0: the kernel's
}

// LogTo names where the watch says, once, that it fell back to git
// status.
func (w *Watch) LogTo(log io.Writer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.log = log
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
	n     *notifier        // watching them; nil: every one has a status
	seq   uint64           // n's count of events at the start
	byGit map[string]bool  // checkouts without a watch: git status at the start and the end
	files map[string]stamp // absolute path → stamp, for every file git status listed
}

// Begin starts watching the base checkout top and the phase and issue
// worktrees beside wt (the worktrees in top/.claudopilot/worktrees on a
// branch) as an attempt in wt starts; a checkout that cannot be watched
// has its dirty and untracked files recorded.
func (w *Watch) Begin(ctx context.Context, git *worktree.Client, top, wt string) *Snapshot {
	s := &Snapshot{wt: wt, start: time.Now(), byGit: map[string]bool{}, files: map[string]stamp{}}
	w.mu.Lock()
	if w.active == nil {
		w.active, w.ended, w.users = map[string]int{}, map[string]time.Time{}, map[*Snapshot]bool{}
	}
	w.active[wt]++
	s.n = w.acquire(s, top)
	w.mu.Unlock()
	if s.n != nil {
		s.n.unwatch(wt) // its own agent writes there
	}
	for _, dir := range watched(ctx, git, top, wt) {
		if dir != top && w.busy(dir, s.start) {
			// An attempt runs there now: End leaves it out whatever
			// happens (its own agent changes it), so it is not looked
			// at either. At MAX_PARALLEL n every attempt looked at the
			// n-1 others twice: n² statuses (issue 25 §1).
			continue
		}
		s.dirs = append(s.dirs, dir)
		if s.n != nil {
			err := s.n.watch(dir)
			if err == nil {
				continue
			}
			w.fellBack(err)
		}
		s.byGit[dir] = true
	}
	if s.n != nil {
		var err error
		if s.seq, err = s.n.sync(); err != nil {
			w.fellBack(err)
			for _, dir := range s.dirs {
				s.byGit[dir] = true
			}
		}
	}
	for dir := range s.byGit {
		for _, p := range dirty(ctx, git, dir) {
			s.files[p] = stampOf(p)
		}
	}
	return s
}

// acquire returns the run's notifier, opened for the first attempt (w.mu
// held); nil when inotify cannot be had.
func (w *Watch) acquire(s *Snapshot, top string) *notifier {
	if w.n == nil {
		if !w.swept {
			// Earlier versions' sync folders, one left by each killed
			// driver: no process holds one (a running earlier driver's,
			// taken, makes its sync fail: git status instead).
			w.swept = true
			tempdir.Reclaim(os.TempDir(), "claudopilot-watch-", time.Hour)
		}
		n, err := openNotifier(w.limit, barrierDir(top))
		if err != nil {
			w.fellBackLocked(err)
			return nil
		}
		w.n = n
	}
	w.users[s] = true
	return w.n
}

// release lets go of s's notifier: the last attempt closes it, and
// changes no running attempt can ask about are forgotten.
func (w *Watch) release(s *Snapshot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s.n == nil || !w.users[s] {
		return
	}
	delete(w.users, s)
	if len(w.users) == 0 {
		w.n.close()
		w.n = nil
		return
	}
	var seq uint64
	var start time.Time
	for o := range w.users {
		if o.seq == 0 {
			continue // its checkouts all have a status
		}
		if seq == 0 || o.seq < seq {
			seq = o.seq
		}
		if start.IsZero() || o.start.Before(start) {
			start = o.start
		}
	}
	if seq > 0 {
		w.n.prune(seq, start)
	}
}

// barrierDir is the notifier's sync folder: in the driver's folder,
// which the watch skips and git status does not list, under a fixed
// name (one driver per repository: the driver lock), so that the next
// run removes what a killed one left.
func barrierDir(top string) string { return filepath.Join(top, ".claudopilot", "watch") }

func (w *Watch) fellBack(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fellBackLocked(err)
}

func (w *Watch) fellBackLocked(err error) {
	if w.warned || w.log == nil {
		return
	}
	w.warned = true
	fmt.Fprintf(w.log, "claudopilot: warning: the stray-write watch cannot watch the checkouts (%v): it runs git status on them at every attempt's start and end instead (raise fs.inotify.max_user_watches, or SANDBOX=bwrap, docs/sandbox.md)\n", err)
}

// End names the files that git status lists and that changed since Begin
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
	lost := false
	if s.n != nil {
		// Every write of the agent's, which has exited, is read first.
		if _, err := s.n.sync(); err != nil {
			lost = true
		}
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
		var isNew func(string) bool
		if s.byGit[dir] {
			isNew = func(p string) bool { before, ok := s.files[p]; return !ok || before != stampOf(p) }
		} else if isNew = s.changedIn(dir, skipped, lost); isNew == nil {
			continue // nothing changed there: no status
		}
		for _, p := range dirty(ctx, git, dir) {
			if !skipped[p] && isNew(p) {
				changed = append(changed, p)
			}
		}
	}
	w.mu.Lock()
	w.active[s.wt]--
	w.ended[s.wt] = time.Now()
	w.mu.Unlock()
	w.release(s)
	sort.Strings(changed)
	return changed
}

// changedIn tells, for the watched checkout dir, which files git lists
// count as changed since s began: those the watch saw change (or under a
// folder it saw made, moved or removed), and when events were lost (lost,
// or the watch's own count) every one whose inode or folder changed since
// the start. nil: nothing changed there.
func (s *Snapshot) changedIn(dir string, skip map[string]bool, lost bool) func(string) bool {
	paths, unknown := s.n.changes(dir, s.seq, s.start, skip)
	unknown = unknown || lost
	if len(paths) == 0 && !unknown {
		return nil
	}
	return func(p string) bool {
		for _, m := range paths {
			if m == p || within(p, m) || within(m, p) {
				return true
			}
		}
		// The change time's clock ticks coarsely: a second early is
		// a file reported too many, never one missed.
		return unknown && changedSince(p, s.start.Add(-time.Second))
	}
}

// within is true when p is under the folder dir.
func within(p, dir string) bool {
	return strings.HasPrefix(p, dir+string(filepath.Separator))
}

// driverTemp is true for a temp file the driver writes beside a path in
// skip and renames over it (atomicfile: "."+name+".tmp…"), once gone.
func driverTemp(p string, skip map[string]bool) bool {
	for s := range skip {
		if filepath.Dir(p) == filepath.Dir(s) && strings.HasPrefix(filepath.Base(p), "."+filepath.Base(s)+".tmp") {
			_, err := os.Lstat(p)
			return err != nil
		}
	}
	return false
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
	// From the files git's list reads: no git process per attempt.
	wts, err := git.WorktreesNoHead(ctx)
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
