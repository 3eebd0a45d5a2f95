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
		ps, err := marked(func(m string) bool { return m == want })
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
	if err := stopMarked(mark, time.Second); err != nil {
		t.Fatal(err)
	}
	ps, err := marked(func(m string) bool { return m == want })
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
