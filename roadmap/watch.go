package roadmap

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watch reports the manifest's content each time it changes on disk, until
// ctx ends. It watches the folder, not the file: editors and `sed -i` save
// by writing a new file and renaming it over the old one, and a watch on the
// file itself goes silent after the first such save. Events are filtered by
// name and debounced, and content identical to the last report is skipped.
// An empty file is never reported: an editor may have truncated it and not
// yet written it back.
//
// poll, when positive, also re-reads the file that often, for file systems
// that deliver no events.
func Watch(ctx context.Context, path string, debounce, poll time.Duration) (<-chan []byte, error) {
	fw, err := watchFolders(path)
	if err != nil {
		return nil, err
	}
	w := &watch{ctx: ctx, path: path, fw: fw, out: make(chan []byte)}
	// The content as of now, read before Watch returns: a change made
	// right after must be reported, not taken as the starting point.
	if b, err := os.ReadFile(path); err == nil {
		w.last = sha256.Sum256(b)
	}
	go w.loop(debounce, poll)
	return w.out, nil
}

// watchFolders watches the manifest's folder, and the folder of the file
// it points to when it is a link: a symlinked manifest changes where that
// file lives.
func watchFolders(path string) (*watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	names := map[string]bool{filepath.Clean(path): true}
	dirs := []string{filepath.Dir(path)}
	if t, err := filepath.EvalSymlinks(path); err == nil && t != filepath.Clean(path) {
		names[t] = true
		if filepath.Dir(t) != dirs[0] {
			dirs = append(dirs, filepath.Dir(t))
		}
	}
	for _, d := range dirs {
		if err := fw.Add(d); err != nil {
			fw.Close()
			return nil, err
		}
	}
	return &watcher{Watcher: fw, names: names}, nil
}

// watcher is the folders' watcher and the names in them that are the
// manifest.
type watcher struct {
	*fsnotify.Watcher
	names map[string]bool
}

// watch is one Watch's goroutine state.
type watch struct {
	ctx  context.Context
	path string
	fw   *watcher
	out  chan []byte
	last [32]byte // the content last reported (or found at start)
}

// loop reports the manifest's changes: debounce after the last file event
// about it, and every poll (a change no event tells of).
func (w *watch) loop(debounce, poll time.Duration) {
	defer w.fw.Close()
	defer close(w.out)
	var fire <-chan time.Time
	var timer *time.Timer
	var tick <-chan time.Time
	if poll > 0 {
		t := time.NewTicker(poll)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-w.ctx.Done():
			return
		case ev, ok := <-w.fw.Events:
			if !ok {
				return
			}
			if !w.fw.names[filepath.Clean(ev.Name)] {
				continue
			}
			timer = rearm(timer, debounce)
			fire = timer.C
		case <-fire:
			fire = nil
			w.check()
		case <-tick:
			w.check()
		case _, ok := <-w.fw.Errors:
			if !ok {
				return
			}
		}
	}
}

// rearm starts the debounce timer, or starts it again from now.
func rearm(timer *time.Timer, d time.Duration) *time.Timer {
	if timer == nil {
		return time.NewTimer(d)
	}
	if !timer.Stop() {
		select {
		case <-timer.C:
		default:
		}
	}
	timer.Reset(d)
	return timer
}

// check reads the manifest and reports it when its content changed (an
// empty file is a save half done: not reported).
func (w *watch) check() {
	b, err := os.ReadFile(w.path)
	if err != nil || len(b) == 0 {
		return
	}
	h := sha256.Sum256(b)
	if h == w.last {
		return
	}
	w.last = h
	select {
	case w.out <- b:
	case <-w.ctx.Done():
	}
}
