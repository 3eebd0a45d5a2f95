package land

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchDebounce coalesces a burst of changes (a `git stash` touches the
// index and every file) into one wake-up, and bounds how often an editor
// that rewrites the index in a loop makes the merge try again.
const watchDebounce = time.Second

// watchClean returns a channel closed once something the merge waits on
// in the base checkout dir may have changed: one of the blocking paths (or
// what stands where it would go), or the index (a `git add`, `git commit`
// or `git stash` there). It stops watching at the first change, when ctx
// ends, or when the next merge begins. nil: nothing could be watched; the
// scheduler's poll still retries.
func (o *Owner) watchClean(ctx context.Context, dir, gitDir string, blocking []string) <-chan struct{} {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil
	}
	// Names that matter, by folder watched.
	names := map[string]map[string]bool{}
	add := func(d, name string) {
		if names[d] == nil {
			if w.Add(d) != nil {
				return
			}
			names[d] = map[string]bool{}
		}
		names[d][name] = true
	}
	for _, p := range blocking {
		// The nearest existing folder above the path, and the name below
		// it on the way to the path.
		rel := p
		for {
			parent := path.Dir(rel)
			full := filepath.Join(dir, filepath.FromSlash(parent))
			if st, err := os.Stat(full); err == nil && st.IsDir() {
				add(full, path.Base(rel))
				break
			}
			if parent == "." || parent == "/" {
				break
			}
			rel = parent
		}
	}
	if gitDir != "" {
		add(gitDir, "index")
	}
	if len(names) == 0 {
		w.Close()
		return nil
	}
	stop := make(chan struct{})
	o.mu.Lock()
	if o.stopWatch != nil {
		close(o.stopWatch)
	}
	o.stopWatch = stop
	o.mu.Unlock()
	changed := make(chan struct{})
	go func() {
		defer w.Close()
		var fire <-chan time.Time
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if d := filepath.Dir(ev.Name); names[d][filepath.Base(ev.Name)] && fire == nil {
					fire = time.After(o.debounceWait())
				}
			case <-w.Errors:
			case <-fire:
				close(changed)
				return
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return changed
}

// debounceWait is watchClean's wait after a change (a test's shorter
// one when set).
func (o *Owner) debounceWait() time.Duration {
	if o.debounce > 0 {
		return o.debounce
	}
	return watchDebounce
}

// stopWatching ends the watch of an earlier wait: a new merge looks again.
func (o *Owner) stopWatching() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopWatch != nil {
		close(o.stopWatch)
		o.stopWatch = nil
	}
}

// gitDirOf is the absolute git dir of worktree dir, or "".
func (o *Owner) gitDirOf(ctx context.Context, dir string) string {
	gd, err := o.Git.AbsGitDir(ctx, dir)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(gd)
}
