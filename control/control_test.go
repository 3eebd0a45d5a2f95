package control

import (
	"errors"

	"github.com/fsnotify/fsnotify"
	"sync"
	"testing"
	"time"
)

func TestUpdateAndLoad(t *testing.T) {
	dir := t.TempDir()
	s, err := Load(dir)
	if err != nil || s.Paused || len(s.LanesOff) != 0 {
		t.Fatalf("empty folder: %+v, %v", s, err)
	}
	if _, err := Update(dir, func(s *Switches) { s.Paused = true }); err != nil {
		t.Fatal(err)
	}
	if _, err := Update(dir, func(s *Switches) {
		if s.LanesOff == nil {
			s.LanesOff = map[string]bool{}
		}
		s.LanesOff["codex"] = true
	}); err != nil {
		t.Fatal(err)
	}
	s, err = Load(dir)
	if err != nil || !s.Paused || !s.LanesOff["codex"] {
		t.Fatalf("after two updates: %+v, %v", s, err)
	}
}

// Flips made at once all survive: the lock serialises read-change-write.
func TestUpdateConcurrent(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := Update(dir, func(s *Switches) {
				if s.LanesOff == nil {
					s.LanesOff = map[string]bool{}
				}
				s.LanesOff[string(rune('a'+i))] = true
			}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	s, _ := Load(dir)
	if len(s.LanesOff) != 20 {
		t.Fatalf("%d of 20 flips kept", len(s.LanesOff))
	}
}

func TestWatch(t *testing.T) {
	dir := t.TempDir()
	out := make(chan Switches)
	if err := Watch(t.Context(), dir, out); err != nil {
		t.Fatal(err)
	}
	if s := <-out; s.Paused {
		t.Fatal("first value paused")
	}
	if _, err := Update(dir, func(s *Switches) { s.Paused = true }); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-out:
		if !s.Paused {
			t.Fatalf("got %+v", s)
		}
	case <-time.After(30 * time.Second): // an upper bound, not a synchronisation
		t.Fatal("no change seen")
	}
}

func TestLanesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if m, err := LoadLanes(dir); err != nil || len(m) != 0 {
		t.Fatalf("%v %v", m, err)
	}
	if err := SaveLanes(dir, map[string]int{"claude": 2, "codex": 0}); err != nil {
		t.Fatal(err)
	}
	m, err := LoadLanes(dir)
	if err != nil || m["claude"] != 2 || len(m) != 2 {
		t.Fatalf("%v %v", m, err)
	}
}

// Without an inotify instance (the per-user limit reached) the switches
// are polled: a change still arrives.
func TestWatchWithoutInotify(t *testing.T) {
	dir := t.TempDir()
	out := make(chan Switches)
	noInotify := func() (*fsnotify.Watcher, error) { return nil, errors.New("too many open files") }
	if err := watch(t.Context(), dir, out, noInotify); err != nil {
		t.Fatal(err)
	}
	<-out
	if _, err := Update(dir, func(s *Switches) { s.Paused = true }); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-out:
		if !s.Paused {
			t.Fatalf("got %+v", s)
		}
	case <-time.After(30 * time.Second): // an upper bound
		t.Fatal("the change never came")
	}
}
