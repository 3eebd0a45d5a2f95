package proc

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A marked process that keeps forking (an agent's daemon starting its next
// git) has children born after stopMarked's scan; they must not outlive
// the stop (TestRunStopsAgentDaemonBeforeGate once found such a git still
// holding the worktree's index.lock).
func TestStopMarkedGetsWhatForksMeanwhile(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	t.Parallel()
	mark := fmt.Sprintf("%s=%d.stoptest%d", MarkVar, os.Getpid(), time.Now().UnixNano())
	_, want, _ := strings.Cut(mark, "=")
	cmd := exec.Command("sh", "-c", "while :; do sleep 30 & done")
	cmd.Env = append(os.Environ(), mark)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	// Let it fork for a while so the scan meets a busy parent.
	for deadline := time.Now().Add(upper); ; time.Sleep(10 * time.Millisecond) {
		ps, err := marked(0, func(m string) bool { return m == want })
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) > 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d forks in %s", len(ps), upper)
		}
	}
	// From the shell's start, as Run stops its run's processes.
	st, ok := readStat(cmd.Process.Pid)
	if !ok {
		t.Fatal("no stat of the shell")
	}
	if err := stopMarked(mark, st.start, time.Second); err != nil {
		t.Fatal(err)
	}
	ps, err := marked(0, func(m string) bool { return m == want })
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) > 0 {
		for _, p := range ps {
			defer exec.Command("kill", "-9", fmt.Sprint(p.pid)).Run()
		}
		t.Fatalf("%d processes carrying the mark outlived the stop", len(ps))
	}
}

// The scan after a run reads the environ only of processes that started
// at or after the run's first one (since): an earlier process is no
// descendant of the run, whatever it carries.
func TestMarkedSkipsWhatStartedBefore(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	t.Parallel()
	mark := fmt.Sprintf("%s=%d.sincetest%d", MarkVar, os.Getpid(), time.Now().UnixNano())
	_, want, _ := strings.Cut(mark, "=")
	cmd := exec.Command("sleep", "30")
	cmd.Env = append(os.Environ(), mark)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	st, ok := readStat(cmd.Process.Pid)
	if !ok {
		t.Fatal("no stat of the process")
	}
	keep := func(m string) bool { return m == want }
	for _, tc := range []struct {
		since uint64
		want  int
	}{{0, 1}, {st.start, 1}, {st.start + 1, 0}} {
		ps, err := marked(tc.since, keep)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) != tc.want {
			t.Errorf("since %d (the process started at %d): %d processes listed, want %d", tc.since, st.start, len(ps), tc.want)
		}
	}
}
