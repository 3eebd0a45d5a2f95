package status

import (
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/promote/record"
	snapstatus "github.com/claudopilot/claudopilot/status"
)

// status says a red promote step in words: which step, since when, why,
// and that it is tried again at the next interval.
func TestPromoteLines(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 5, 3, 40, 0, 0, time.Local)
	var b strings.Builder
	writePromote(&b, []record.Result{
		{At: at, Kind: record.Promoted, From: "main", To: "staging", PR: 4},
		{At: at, Kind: record.Red, From: "staging", To: "production", PR: 5, Why: "checks red: e2e"},
	})
	want := "Promote main→staging: promoted Dec 5 03:40 (pull request #4)\n" +
		"Promote staging→production: RED since Dec 5 03:40 (pull request #5): checks red: e2e; tried again after PROMOTE_EVERY_HOURS (agents do not repair it)\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// A predicted merge conflict gets its own line under the phase's row
// (status.TestPredictedConflictInStatus puts it in the row).
func TestConflictLine(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	writeTable(&b, false, snapstatus.Report{Phases: []snapstatus.Phase{
		{ID: "a", Title: "a", State: "running", Attempts: 1, Conflict: "predicted conflict with b on shared.txt"},
	}})
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		if i > 0 && strings.HasPrefix(lines[i-1], "  a ") && strings.HasPrefix(l, "  ") && strings.TrimSpace(l) == "predicted conflict with b on shared.txt" {
			return
		}
	}
	t.Errorf("no conflict line under a's row:\n%s", b.String())
}
