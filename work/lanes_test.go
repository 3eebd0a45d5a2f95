package work_test

import (
	"testing"

	"github.com/claudopilot/claudopilot/work"
)

// Only lines of LaneLine's form count: the description is config anyone may write.
func TestLanesTrailer(t *testing.T) {
	t.Parallel()
	for desc, want := range map[string]string{
		"":                      "",
		"my notes":              "",
		"worker 1: lane claude": "worker 1 claude",
		"x\nworker 2: lane codex\nsupervisor 1: lane codex\n": "worker 2 codex; supervisor 1 codex",
		"worker 1: lane claude; rm -rf /":                     "",
		"worker one: lane claude":                             "",
	} {
		if got := work.LanesTrailer(desc); got != want {
			t.Errorf("LanesTrailer(%q) = %q, want %q", desc, got, want)
		}
	}
}
