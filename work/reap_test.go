package work_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
)

// sleeper starts `sleep 60` in dir with the given extra environment and
// in its own process group, and stops it when the test ends.
func sleeper(t *testing.T, dir string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	return cmd
}

// gone reports whether the process has exited (a zombie counts).
func gone(pid int) bool { return !proc.Alive(pid) }

// A killed driver's processes still working inside .claudopilot/ (its
// git, say, which holds a worktree's index.lock) are stopped at the next
// start, before any lock there is taken for stale; a process the user
// runs there, unmarked, is left alone.
func TestReapStopsWhatAnEarlierDriverLeft(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	wt := f.wt()
	if err := os.MkdirAll(wt, 0o755); err != nil {
		t.Fatal(err)
	}
	earlier := sleeper(t, wt, proc.MarkVar+"=999999999.git")
	user := sleeper(t, wt)
	outside := sleeper(t, f.tmp, proc.MarkVar+"=999999999.git")
	var said []string
	err := work.Reap(work.ReapOptions{
		Journal: filepath.Join(f.tmp, "no-journal.jsonl"), Layout: f.layout, Grace: time.Second,
		Say: func(s string) { said = append(said, s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !gone(earlier.Process.Pid) {
		t.Error("the earlier driver's process still runs")
	}
	if gone(user.Process.Pid) || gone(outside.Process.Pid) {
		t.Error("a process that is not the earlier driver's inside .claudopilot/ was stopped")
	}
	if len(said) != 1 || !strings.Contains(said[0], "earlier driver") {
		t.Errorf("said %q", said)
	}
}

// When an earlier driver's agent cannot be stopped, Reap fails: no phase
// may resume in a worktree where it may still write.
func TestReapFailsClosed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	wt := f.wt()
	if err := os.MkdirAll(wt, 0o755); err != nil {
		t.Fatal(err)
	}
	agent := sleeper(t, wt)
	jn, err := state.OpenJournal(filepath.Join(f.tmp, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	jn.Append(state.Record{Phase: "p1", Event: "launch", Role: state.Worker, Attempt: 1})
	jn.Append(state.Record{Phase: "p1", Event: "pgid", Role: state.Worker, Attempt: 1, PGID: agent.Process.Pid})
	jn.Close()
	err = work.Reap(work.ReapOptions{
		Journal: jn.Path(), Layout: f.layout, Grace: time.Second,
		Kill: func(int, time.Duration) error { return errors.New("EPERM") },
	})
	if err == nil || !strings.Contains(err.Error(), "p1") || !strings.Contains(err.Error(), "no phase resumes") {
		t.Fatalf("err = %v, want a failure naming p1", err)
	}
	// With the real kill it is stopped and the run may go on.
	if err := work.Reap(work.ReapOptions{Journal: jn.Path(), Layout: f.layout, Grace: time.Second}); err != nil {
		t.Fatal(err)
	}
	if !gone(agent.Process.Pid) {
		t.Error("the agent still runs")
	}
}
