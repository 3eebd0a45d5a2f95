package scheduler

import (
	"context"
	"slices"
	"testing"

	"github.com/claudopilot/claudopilot/state"
)

// TestOutsideLandingRoutes: how the loop routes an issue's landing
// outcome, the scheduler's share of the issues package's end-to-end
// landing tests (those run only under CLAUDOPILOT_SOAK=1):
//   - a conflict with the branch's head set goes to the supervisor, beyond
//     that head (TestBaseMovedWithAConflictGoesToTheSupervisor);
//   - checks still pending at CHECKS_TIMEOUT (no head: nothing for a repair
//     to go beyond) block the issue with no supervisor
//     (TestPendingChecksTimeOut);
//   - red checks that stay red block it once MAX_SUPERVISOR_ATTEMPTS repairs
//     are spent, with the checks reason (TestRedChecksBlockAfterTheRepairs).
func TestOutsideLandingRoutes(t *testing.T) {
	red := func(commit string) MergeOutcome {
		return MergeOutcome{Reason: state.ReasonChecks, Detail: "failing checks: ci/test", Checks: []string{"ci/test"}, Commit: commit}
	}
	for _, tc := range []struct {
		name      string
		script    []MergeOutcome
		state     string
		repairs   int
		failure   state.Reason
		since     []string // each repair's Since
		lastEvent string   // the last record of #1
	}{
		{"conflict", []MergeOutcome{{Reason: state.ReasonConflict, Detail: "main moved since the checks ran", Commit: "head-1"}},
			"merged", 1, state.ReasonConflict, []string{"head-1"}, "#1 merged "},
		{"checks pending", []MergeOutcome{{Reason: state.ReasonChecks, Detail: "checks of x still pending after CHECKS_TIMEOUT (10m0s): ci/slow"}},
			"blocked", 0, "", nil, "#1 blocked checks"},
		{"checks stay red", []MergeOutcome{red("red-1"), red("red-2"), red("red-3")},
			"blocked", 2, state.ReasonChecks, []string{"red-1", "red-2"}, "#1 blocked checks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource()
			src.script["#1"] = tc.script
			h := sourceHarness(t, manifestOf("[merged] **a** — A (deps: none)"), Config{MaxParallel: 1, MaxSupervisorAttempts: 2, KeepGoing: true}, src)
			src.ch <- []OutsideNode{issueNode(1)}
			close(src.ch)
			sum, evs, err := h.run(context.Background())
			if err != nil {
				t.Fatalf("run: %v\n%s", err, fmtEvents(evs))
			}
			if st := phaseSummary(t, sum, "#1").State; st != tc.state {
				t.Fatalf("#1 is %s, want %s\n%s", st, tc.state, fmtEvents(evs))
			}
			sv := h.runner.jobsOf("#1", state.Supervisor)
			var since []string
			for _, j := range sv {
				since = append(since, j.Since)
				if j.Failure != tc.failure {
					t.Errorf("supervisor job for %s, want %s: %+v", j.Failure, tc.failure, j)
				}
			}
			if len(sv) != tc.repairs || !slices.Equal(since, tc.since) {
				t.Errorf("%d supervisor jobs beyond %q, want %d beyond %q", len(sv), since, tc.repairs, tc.since)
			}
			if got := src.recorded(); len(got) == 0 || got[len(got)-1] != tc.lastEvent {
				t.Errorf("records %q, want the last %q", got, tc.lastEvent)
			}
		})
	}
}
