package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

	"github.com/claudopilot/claudopilot/atomicfile"
	"github.com/claudopilot/claudopilot/protect"
)

// File is the switches' file name in the state folder.
const File = "control.json"

// LanesFile holds the pacer's last plan, so a lane whose usage cannot be
// read keeps its previous concurrency across restarts.
const LanesFile = "lanes.json"

// Switches are what a human has switched.
type Switches struct {
	Paused   bool            `json:"paused"`
	PausedAt time.Time       `json:"paused_at,omitzero"`
	LanesOff map[string]bool `json:"lanes_off,omitempty"`
	// Drain asks the running driver to finish what runs and stop. It
	// does not outlive that driver: the next one clears it at start.
	Drain bool `json:"drain,omitempty"`
	// Answers are the user's answers to agents' questions, by node id:
	// each names the question's time, so it answers that question only
	// (the running driver takes it within a second, a later one at start).
	Answers map[string]Answer `json:"answers,omitempty"`
}

// Answer is one answer to the question asked at Asked.
type Answer struct {
	Asked time.Time `json:"asked"`
	Text  string    `json:"text"`
}

// Equal reports whether two switch sets say the same.
func (s Switches) Equal(o Switches) bool {
	return s.Paused == o.Paused && s.Drain == o.Drain && maps.Equal(s.offOnly(), o.offOnly()) && maps.Equal(s.Answers, o.Answers)
}

func (s Switches) offOnly() map[string]bool {
	m := map[string]bool{}
	for k, v := range s.LanesOff {
		if v {
			m[k] = true
		}
	}
	return m
}

// Load reads the switches in dir; a missing file is "nothing switched".
func Load(dir string) (Switches, error) {
	var s Switches
	b, err := os.ReadFile(filepath.Join(dir, File))
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read switches: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("read switches %s: %w", filepath.Join(dir, File), err)
	}
	return s, nil
}

// Update changes the switches under an exclusive lock, so two commands
// flipping at once cannot lose one flip, and writes them atomically.
func Update(dir string, change func(*Switches)) (Switches, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Switches{}, fmt.Errorf("switches: %w", err)
	}
	lk, err := os.OpenFile(filepath.Join(dir, File+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return Switches{}, fmt.Errorf("switches: %w", err)
	}
	defer lk.Close()
	if err := unix.Flock(int(lk.Fd()), unix.LOCK_EX); err != nil {
		return Switches{}, fmt.Errorf("switches: lock: %w", err)
	}
	s, err := Load(dir)
	if err != nil {
		return s, err
	}
	change(&s)
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return s, err
	}
	return s, atomicfile.Write(filepath.Join(dir, File), append(b, '\n'), 0o644)
}

// LoadLanes reads the pacer's last concurrency per lane.
func LoadLanes(dir string) (map[string]int, error) {
	m := map[string]int{}
	b, err := os.ReadFile(filepath.Join(dir, LanesFile))
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("read lanes: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return map[string]int{}, fmt.Errorf("read lanes %s: %w", filepath.Join(dir, LanesFile), err)
	}
	return m, nil
}

// SaveLanes records the pacer's concurrency per lane.
func SaveLanes(dir string, m map[string]int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("lanes: %w", err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, LanesFile), append(b, '\n'), 0o644)
}

// Watch sends the switches on out whenever they change, starting with
// their value now, until ctx ends. It watches the folder (the file is
// replaced by rename, which a watch on the file itself would miss) and
// reads again on every event for the file.
func Watch(ctx context.Context, dir string, out chan<- Switches) error {
	return watch(ctx, dir, out, fsnotify.NewWatcher)
}

// pollEvery is how often the switches are read when the folder cannot be
// watched: within the second a switch promises.
const pollEvery = 500 * time.Millisecond

func watch(ctx context.Context, dir string, out chan<- Switches, newWatcher func() (*fsnotify.Watcher, error)) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	last, err := Load(dir)
	if err != nil {
		return err
	}
	w, err := newWatcher()
	if err == nil {
		if err = w.Add(dir); err != nil {
			w.Close()
		}
	}
	if err != nil {
		// No inotify instance to be had (the per-user limit, 128 by
		// default, is shared by every watching process): read the file
		// on a timer instead. A switch must never be lost to it.
		go poll(ctx, dir, last, out)
		return nil
	}
	go func() {
		defer w.Close()
		select {
		case out <- last:
		case <-ctx.Done():
			return
		}
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-w.Events:
				if filepath.Base(ev.Name) != File {
					continue
				}
				s, err := Load(dir)
				if err != nil || s.Equal(last) {
					continue // half-written or unchanged: the next event brings it
				}
				last = s
				select {
				case out <- s:
				case <-ctx.Done():
					return
				}
			case <-w.Errors:
			}
		}
	}()
	return nil
}

// poll sends the switches whenever a read finds them changed.
func poll(ctx context.Context, dir string, last Switches, out chan<- Switches) {
	select {
	case out <- last:
	case <-ctx.Done():
		return
	}
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s, err := Load(dir)
		if err != nil || s.Equal(last) {
			continue
		}
		last = s
		select {
		case out <- s:
		case <-ctx.Done():
			return
		}
	}
}

// Protected declares the switches' files in dir (the state folder, inside
// top, the repository's top level) for the landing's check (package
// protect): a committed control.json would pause or drain the next run.
func Protected(top, dir string) []protect.Rule {
	var rules []protect.Rule
	for _, f := range []string{File, LanesFile} {
		rules = append(rules, protect.File(top, filepath.Join(dir, f), "a control file: the switches (pause, drain, lanes) a running driver reads")...)
	}
	return rules
}
