package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/state"
)

// A supervisor whose fix passes the branch gate while the merge with the
// base stays red must still use up its attempt: before this was fixed, the
// supervisor and the merge took turns forever.
func TestMergeRedUsesUpSupervisorAttempts(t *testing.T) {
	t.Parallel()
	text := manifestOf("[pending] **a** — a (deps: none)")
	h := newHarness(t, text, Config{MaxParallel: 1, MaxSupervisorAttempts: 2, KeepGoing: true})
	red := mstep{Reason: state.ReasonGate, Detail: "red on the merge"}
	h.merger.on("a", red, red, red, red, red, red)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _, err := h.run(ctx)
	wantErrIs(t, err, ErrParked)
	if n := len(h.runner.jobsOf("a", state.Supervisor)); n != 2 {
		t.Errorf("%d supervisor runs, want 2", n)
	}
	if n := len(h.merger.jobsOf("a")); n != 3 {
		t.Errorf("%d merges, want 3 (after the worker and each supervisor)", n)
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Blocked})
}

// When a finished phase's merge is under way and a phase it unblocks
// outranks everything ready now, the freed slot waits for the merge
// instead of going to the lesser phase.
func TestSlotKeptForPhaseUnblockedByMerge(t *testing.T) {
	t.Parallel()
	text := manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b, short and alone (deps: none)",
		"[pending] **c** — c (deps: a)",
		"[pending] **d** — d (deps: c)",
	)
	h := newHarness(t, text, Config{MaxParallel: 1})
	_, _, err := h.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, j := range h.runner.allJobs() {
		order = append(order, j.ID)
	}
	// c (two phases of work behind it) outranks b (one) once a is done;
	// d and b then tie and file order decides.
	if got := strings.Join(order, " "); got != "a c b d" {
		t.Fatalf("launch order %q, want %q", got, "a c b d")
	}
}
