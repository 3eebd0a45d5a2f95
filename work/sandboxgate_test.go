package work_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/work"
)

// SANDBOX_GATE=1 (issue 13): WORKTREE_PREPARE_CMD and a gate (RunGateIn,
// which the attempt's gate and land's merge gate both run through) are
// confined as agents are: each tries to write into the base checkout, and
// nothing lands there; without SANDBOX_GATE they run as the user's own
// commands and their writes land. The script sandbox_gate runs the same
// through the driver under CLAUDOPILOT_SOAK=1.
func TestPrepareAndGateInTheSandbox(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap is not installed")
	}
	t.Parallel()
	for _, gate := range []bool{true, false} {
		t.Run(map[bool]string{true: "SANDBOX_GATE=1", false: "SANDBOX_GATE=0"}[gate], func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.sandboxed()
			f.runner.Sandbox.Gate = gate
			fromPrepare, fromGate := filepath.Join(f.top, "from-prepare"), filepath.Join(f.top, "from-gate")
			f.runner.Prepare = "touch " + fromPrepare + " 2>/dev/null; echo prepare ran; exit 0"
			f.run(job()) // the fresh worktree runs WORKTREE_PREPARE_CMD
			ok, log, err := work.RunGateIn(f.ctx, f.runner.Sandbox, f.git, f.layout, "p1", "touch "+fromGate+" 2>/dev/null; exit 0",
				f.wt(), f.runner.Env, nil, 0, f.runner.KillGrace)
			if !ok || err != nil {
				b, _ := os.ReadFile(log)
				t.Fatalf("gate: ok %v, %v\n%s", ok, err, b)
			}
			for _, p := range []string{fromPrepare, fromGate} {
				_, err := os.Stat(p)
				if landed := err == nil; landed == gate {
					t.Errorf("%s in the base checkout: %v, want %v (SANDBOX_GATE %v)", filepath.Base(p), landed, !gate, gate)
				}
			}
			if b, _ := os.ReadFile(f.layout.LogPath("p1", "prepare", 1)); !strings.Contains(string(b), "prepare ran") {
				t.Errorf("WORKTREE_PREPARE_CMD did not run: its log %q", b)
			}
		})
	}
}
