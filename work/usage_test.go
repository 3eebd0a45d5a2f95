package work_test

import (
	"strings"
	"testing"
)

// An agent that reports a negative cost spends nothing on the books: the
// figure is skipped, noted in its log and warned about (#22 §5).
func TestNegativeCostIsSkippedAndWarned(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.runner.Agent = f.agent(`echo '{"type":"result","total_cost_usd":-1000,"session_id":"s1"}'` + doneBody)
	o := f.run(job())
	if o.Reason != "" {
		t.Fatalf("outcome %+v", o)
	}
	if _, ok := o.Usage.Cost(); ok || o.Usage.SessionID != "s1" {
		t.Errorf("usage %+v: the cost should be unknown, the session kept", o.Usage)
	}
	if len(o.Warnings) != 1 || !strings.Contains(o.Warnings[0], "total_cost_usd -1000 is negative") {
		t.Errorf("warnings %q", o.Warnings)
	}
	if log := f.read(o.LogPath); !strings.Contains(log, "claudopilot: unreadable cost skipped: total_cost_usd -1000 is negative") {
		t.Errorf("log:\n%s", log)
	}
}
