package engine

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/state"
)

// The web page's log pane reads the same listing as `logs`
// (state.Layout.Logs): with no role named, the newest agent log before a
// newer gate log; a role and an attempt pick that file; a repair's failure
// summary is no log.
func TestFindLog(t *testing.T) {
	rm, err := roadmap.Parse("/rm", []byte("# Execution Manifest: t\n\n1. [pending] **p1** — one (deps: none)\n"), nil, roadmap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := state.Layout{Top: t.TempDir()}
	if _, err := FindLog(l, rm, "p1", "", 0); err == nil {
		t.Fatal("a log before any was written")
	}
	t0 := time.Now().Add(-time.Hour)
	for i, name := range []string{"worker-1.log", "gate-1.log", "supervisor-1.log", "gate-2.log", "supervisor-1.failure.log"} {
		p := filepath.Join(l.LogDir("p1"), name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		mt := t0.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		role    string
		attempt int
		want    string
	}{
		{"", 0, "supervisor-1.log"},
		{"gate", 0, "gate-2.log"},
		{"gate", 1, "gate-1.log"},
		{"", 1, "supervisor-1.log"},
		{"worker", 0, "worker-1.log"},
	} {
		got, err := FindLog(l, rm, "p1", tc.role, tc.attempt)
		if err != nil || filepath.Base(got) != tc.want {
			t.Errorf("role %q attempt %d: %s %v, want %s", tc.role, tc.attempt, got, err, tc.want)
		}
	}
	if _, err := FindLog(l, rm, "p1", "reviewer", 0); err == nil {
		t.Error("a reviewer log that is not there")
	}
	if _, err := FindLog(l, rm, "nope", "", 0); err == nil {
		t.Error("a log of an unknown phase")
	}
}
