package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A process takes its slot from the pool for its run and gives it back;
// with none free, a start waits and a cancelled wait starts nothing.
func TestSlots(t *testing.T) {
	t.Parallel()
	s := NewSlots(1)
	if err := s.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	res := Run(ctx, Spec{Command: "touch " + marker, Dir: dir, LogPath: filepath.Join(dir, "a.log"), Slots: s})
	if res.Reason != ReasonCanceled || fileExists(marker) {
		t.Fatalf("with no free slot: %+v, ran=%v", res, fileExists(marker))
	}
	s.Release()
	res = Run(context.Background(), Spec{Command: "touch " + marker, Dir: dir, LogPath: filepath.Join(dir, "b.log"), Slots: s})
	if res.ExitCode != 0 || !fileExists(marker) {
		t.Fatalf("with a free slot: %+v", res)
	}
	// Given back: it can be taken again at once.
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if err := s.Acquire(ctx2); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if len(s.ch) != 1 {
		// Acquire with a cancelled context may still win the free slot.
		if err := s.Acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	var none *Slots
	if err := none.Acquire(ctx2); err != nil {
		t.Fatalf("nil pool: %v", err)
	}
	none.Release()
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
