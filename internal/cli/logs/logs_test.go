package logs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/state"
)

// `logs --attempt N` of a log LOG_KEEP rotated away says so: when, and how
// its attempt ended.
func TestLogsSaysRotated(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(top, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("roadmap/EXECUTION-MANIFEST.md", "1. [pending] **p1** — one\n")
	write("roadmap/p1.md", "# p1\n")
	env := []string{"GIT_CONFIG_GLOBAL=" + os.DevNull, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b", "PATH=" + os.Getenv("PATH")}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-qm", "init"}} {
		c := exec.Command("git", args...)
		c.Dir, c.Env = top, env
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	l := state.Layout{Top: top}
	at := time.Date(2026, 12, 4, 22, 5, 4, 0, time.UTC)
	for n := 1; n <= 2; n++ {
		write(filepath.Join(".claudopilot/logs/p1", fmt.Sprintf("worker-%d.log", n)), "work\n"+state.EndStamp(at, fmt.Sprintf("worker attempt %d of p1 finished: exit 0", n))+"\n")
	}
	if gone, err := l.RotateLogs("p1", "worker", 1, at); err != nil || len(gone) != 1 {
		t.Fatalf("rotated %v, %v", gone, err)
	}
	var out, errOut strings.Builder
	a := &cmdutil.App{S: &cmdutil.Streams{Out: &out, Err: &errOut}, Env: map[string]string{"PATH": os.Getenv("PATH")}, Cwd: top}
	err := NewCmd(nil).Run(context.Background(), a, []string{"p1", "--role", "worker", "--attempt", "1"})
	if err == nil || !strings.Contains(err.Error(), "logs: the worker log of attempt 1 of p1 was rotated away (LOG_KEEP) at ") ||
		!strings.Contains(err.Error(), "it ended: === claudopilot 2026-12-04T22:05:04Z: worker attempt 1 of p1 finished: exit 0") {
		t.Errorf("logs --attempt 1: %v", err)
	}
	if err := NewCmd(nil).Run(context.Background(), a, []string{"p1", "--role", "worker", "--attempt", "2"}); err != nil || !strings.Contains(out.String(), "work") {
		t.Errorf("logs --attempt 2: %v %q", err, out.String())
	}
}
