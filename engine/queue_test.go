package engine

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/claudopilot/claudopilot/roadmap"
)

// The queue's last read of issue states, as it stops polling, must not be
// lost to a manifest caught mid-save (the driver writing a merge's state
// in that instant): it reads again until the manifest loads. Skipping it
// left a phase waiting on an issue just merged, and the run ended
// "nothing can progress" (seen with two suites at once; f107b67).
func TestLastRefreshWaitsOutAHalfSavedManifest(t *testing.T) {
	good, err := roadmap.Parse("/rm", []byte("# R\n\n1. [pending] **p1** — after the issue (deps: #1)\n"), nil, roadmap.Options{External: roadmap.IsIssueRef})
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	r := newQueueRun("/rm/EXECUTION-MANIFEST.md", io.Discard, func(_ context.Context, ids []string) (map[string]bool, error) {
		asked++
		return map[string]bool{ids[0]: true}, nil
	})
	r.pause = 0
	loads := 0
	r.load = func() (*roadmap.Roadmap, error) {
		if loads++; loads <= 3 {
			return nil, errors.New("no phases: the file is truncated") // an editor's or the driver's save, half-way
		}
		return good, nil
	}
	r.lastRefresh(context.Background())
	if loads != 4 || asked != 1 || !r.done("#1") {
		t.Fatalf("loads %d, asked %d, #1 done %v: want the 4th load to be read and #1 done", loads, asked, r.done("#1"))
	}

	// A manifest that never loads is given up on, with a warning, after a
	// bounded number of tries.
	loads = 0
	r.load = func() (*roadmap.Roadmap, error) { loads++; return nil, errors.New("truncated") }
	r.lastRefresh(context.Background())
	if loads != 51 {
		t.Errorf("loads %d, want 51 then give up", loads)
	}
}
