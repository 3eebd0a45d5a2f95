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
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	// A symlinked manifest changes where the file it points to lives:
	// watch that folder too.
	names := map[string]bool{filepath.Clean(path): true}
	dirs := []string{filepath.Dir(path)}
	if t, err := filepath.EvalSymlinks(path); err == nil && t != filepath.Clean(path) {
		names[t] = true
		if filepath.Dir(t) != dirs[0] {
			dirs = append(dirs, filepath.Dir(t))
		}
	}
	for _, d := range dirs {
		if err := w.Add(d); err != nil {
			w.Close()
			return nil, err
		}
	}
	// The content as of now, read before Watch returns: a change made
	// right after must be reported, not taken as the starting point.
	var last [32]byte
	if b, err := os.ReadFile(path); err == nil {
		last = sha256.Sum256(b)
	}
	out := make(chan []byte)
	go func() {
		defer w.Close()
		defer close(out)
		var fire <-chan time.Time
		var timer *time.Timer
		var tick <-chan time.Time
		if poll > 0 {
			t := time.NewTicker(poll)
			defer t.Stop()
			tick = t.C
		}
		check := func() {
			b, err := os.ReadFile(path)
			if err != nil || len(b) == 0 {
				return
			}
			h := sha256.Sum256(b)
			if h == last {
				return
			}
			last = h
			select {
			case out <- b:
			case <-ctx.Done():
			}
		}
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if !names[filepath.Clean(ev.Name)] {
					continue
				}
				if timer == nil {
					timer = time.NewTimer(debounce)
				} else {
					if !timer.Stop() {
						select {
						case <-timer.C:
						default:
						}
					}
					timer.Reset(debounce)
				}
				fire = timer.C
			case <-fire:
				fire = nil
				check()
			case <-tick:
				check()
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
			}
		}
	}()
	return out, nil
}
