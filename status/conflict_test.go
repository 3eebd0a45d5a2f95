package status_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/status"
)

// A merge conflict the merge-tree dry runs predicted for a running phase
// of a live run (the scheduler's "conflict" record) is in its status row,
// and in status --json as predicted_conflict, until the phase lands or
// parks.
// The script run_predict_conflict shows the same through the driver
// under CLAUDOPILOT_SOAK=1.
func TestPredictedConflictInStatus(t *testing.T) {
	const detail = "predicted conflict with p6 on api/x.go"
	rm, err := roadmap.Parse("/rm", []byte(src), nil, roadmap.Options{External: roadmap.IsIssueRef})
	if err != nil {
		t.Fatal(err)
	}
	l := state.Layout{Top: t.TempDir()}
	journal(t, l,
		state.Record{Phase: "p5", Event: "launch", Role: state.Worker, Attempt: 1},
		state.Record{Phase: "p5", Event: "conflict", Detail: detail},
		state.Record{Phase: "p6", Event: "launch", Role: state.Worker, Attempt: 1},
		state.Record{Phase: "p6", Event: "conflict", Detail: "predicted conflict with p5 on api/x.go"},
		state.Record{Phase: "p6", Event: "failed", Reason: state.ReasonExit},
	)
	// A live run: this process holds the lock.
	host, _ := os.Hostname()
	lock, _ := json.Marshal(state.LockInfo{PID: os.Getpid(), Host: host, Time: time.Now()})
	lockPath := filepath.Join(t.TempDir(), state.LockFile)
	if err := os.WriteFile(lockPath, lock, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := status.Read(rm, l, lockPath, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !s.Live {
		t.Fatal("the snapshot is not live: the lock was not read as held")
	}
	if c := s.Hist["p6"].Conflict; c != "" {
		t.Errorf("p6 failed, yet its history keeps the conflict %q", c)
	}
	r := s.Report(state.Rules{})
	for _, p := range r.Phases {
		switch p.ID {
		case "p5":
			if p.Conflict != detail {
				t.Errorf("p5's row: conflict %q, want %q", p.Conflict, detail)
			}
			b, err := json.Marshal(p)
			if err != nil || !strings.Contains(string(b), `"predicted_conflict":"`+detail+`"`) {
				t.Errorf("p5's JSON row %s (%v) lacks predicted_conflict", b, err)
			}
		}
	}
}
