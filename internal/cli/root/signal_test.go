package root

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestSignalContextTellsTheSignal: SIGTERM ends a command as SIGINT does
// (the one context both cancel) and is told apart, so the exit code says
// 143 (cmdutil TestExitCodes maps it). The script run_interrupt stops a
// driver with SIGINT end to end, and with SIGTERM too only under
// CLAUDOPILOT_SOAK=1 (#23). In a process of its own (this test binary
// again): signalContext takes SIGINT and SIGTERM for the rest of the
// process's life, and exits at the second.
func TestSignalContextTellsTheSignal(t *testing.T) {
	if os.Getenv("SIGNAL_CONTEXT_CHILD") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSignalContextTellsTheSignal$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SIGNAL_CONTEXT_CHILD=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	ctx, cause := signalContext()
	if s := cause(); s != nil {
		t.Fatalf("cause before any signal: %v", s)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute): // an upper bound, not a wait
		t.Fatal("SIGTERM did not cancel the command's context")
	}
	for range 2 { // asked again, it still says so
		if s := cause(); s != syscall.SIGTERM {
			t.Fatalf("cause: %v, want SIGTERM", s)
		}
	}
}
