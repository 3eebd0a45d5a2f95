package land_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/claudopilot/claudopilot/sandbox"
)

// LOCKFILE_CMD runs the branch's own scripts (npm install would): with
// SANDBOX_GATE=1 it runs in the sandbox, like a gate (issue 13). Its write
// into the base checkout fails there, the lockfile it regenerates in the
// phase's worktree (from the base's, no conflict markers) lands on the
// base; without SANDBOX_GATE it is the user's own command and its write
// lands. The script sandbox_lockfile runs the same through the driver
// under CLAUDOPILOT_SOAK=1.
func TestMergeLockfileCmdInTheSandbox(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap (bwrap) is not installed")
	}
	t.Parallel()
	for _, gate := range []bool{true, false} {
		t.Run(map[bool]string{true: "SANDBOX_GATE=1", false: "SANDBOX_GATE=0"}[gate], func(t *testing.T) {
			t.Parallel()
			f := newLockfileFixture(t)
			_, tip := f.branchOut("p1", "p1-first.md", map[string]string{"go.sum": "a v1\nc v1\n", "c.go": "package c\n"})
			f.commitOn(f.top, "human deps", map[string]string{"go.sum": "a v1\nb v1\n"})
			f.owner.Sandbox = &sandbox.Config{Gate: gate, Hide: []string{sandbox.Real(f.top)}}
			stray := filepath.Join(f.top, "lockfile-stray")
			f.owner.LockfileCmd = "touch " + stray + " 2>/dev/null; m=$(grep -c '^<<<<<<<' go.sum); printf 'regenerated markers=%s\\n' \"$m\" > go.sum"
			f.mustMerge(job("p1", "first phase", tip))
			if got := f.committed("main", "go.sum"); got != "regenerated markers=0\n" {
				t.Errorf("go.sum on main = %q, want the one regenerated in the worktree from the base's", got)
			}
			_, err := os.Stat(stray)
			if landed := err == nil; landed == gate {
				t.Errorf("LOCKFILE_CMD's write into the base checkout landed: %v, want %v (SANDBOX_GATE %v)", landed, !gate, gate)
			}
			if !exists(filepath.Join(f.layout.LogDir("p1"), "lockfile-1.log")) || exists(filepath.Join(f.layout.LogDir("p1"), "lockfile-2.log")) {
				t.Errorf("want one lockfile log")
			}
		})
	}
}
