package cmdutil

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// Every way a command can end maps to one documented exit code.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error { return fmt.Errorf("run: %w", err) }
	for _, c := range []struct {
		name string
		err  error
		sig  os.Signal
		want int
	}{
		{"success", nil, nil, 0},
		{"help", ErrHelpShown, nil, 0},
		{"usage", UsageErrorf("bad flag"), nil, 64},
		{"invalid manifest", &roadmap.InvalidError{Path: "m", Problems: []roadmap.Problem{{Line: 1, Msg: "x"}}}, nil, 3},
		{"nothing can progress", wrap(scheduler.ErrNoProgress), nil, 3},
		{"checkpoint", wrap(scheduler.ErrCheckpoint), nil, 2},
		{"halt exhausted", &scheduler.HaltError{ID: "p", Reason: state.ReasonGate}, nil, 5},
		{"halt exit", wrap(&scheduler.HaltError{ID: "p", Reason: state.ReasonExit}), nil, 5},
		{"halt no-done", &scheduler.HaltError{ID: "p", Reason: state.ReasonNoDone}, nil, 6},
		{"halt no-done, the repair exited", &scheduler.HaltError{ID: "p", Reason: state.ReasonExit, NoDone: true}, nil, 6},
		{"worker checkpoint", &scheduler.HaltError{ID: "p", Reason: state.ReasonCheckpoint}, nil, 2},
		{"worker dependency error", &scheduler.HaltError{ID: "p", Reason: state.ReasonDeps}, nil, 4},
		{"parked", scheduler.ErrParked, nil, 8},
		{"run budget reached", wrap(scheduler.ErrBudget), nil, 9},
		{"not a repo", wrap(worktree.ErrNotRepo), nil, 1},
		{"locked", &state.LockedError{Path: "l"}, nil, 1},
		{"other", errors.New("disk on fire"), nil, 1},
		{"sigint", scheduler.ErrInterrupted, os.Interrupt, 130},
		{"sigterm", scheduler.ErrInterrupted, syscall.SIGTERM, 143},
		{"interrupted without a signal", scheduler.ErrInterrupted, nil, 130},
	} {
		if got := ExitCode(c.err, c.sig); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}

// Errors read "claudopilot: <what>: <why>"; a bad manifest is its own
// "path:line: message" lines.
func TestFormatError(t *testing.T) {
	t.Parallel()
	if got := FormatError(fmt.Errorf("merge p: %w", errors.New("boom"))); got != "claudopilot: merge p: boom" {
		t.Errorf("got %q", got)
	}
	inv := &roadmap.InvalidError{Path: "r/M.md", Problems: []roadmap.Problem{{Line: 3, Msg: "bad"}}}
	if got := FormatError(inv); got != "r/M.md:3: bad" {
		t.Errorf("got %q", got)
	}
}

func TestColorOnlyOnATerminalWithoutNoColor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		tty  bool
		env  map[string]string
		want bool
	}{
		{true, map[string]string{"TERM": "xterm"}, true},
		{false, map[string]string{"TERM": "xterm"}, false},
		{true, map[string]string{"TERM": "xterm", "NO_COLOR": ""}, false},
		{true, map[string]string{"TERM": "xterm", "NO_COLOR": "1"}, false},
		{true, map[string]string{"TERM": "dumb"}, false},
	} {
		if got := ColorOn(c.tty, c.env); got != c.want {
			t.Errorf("tty=%v env=%v: %v, want %v", c.tty, c.env, got, c.want)
		}
	}
}
