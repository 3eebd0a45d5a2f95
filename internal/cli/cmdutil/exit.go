package cmdutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// Exit codes. Run outcomes keep Claudopilot's numbers so scripts written for
// it keep working; this file is the only place an error becomes a number.
// Claudopilot's 7 (MAX_ITER reached) is not one: a run here ends by itself
// when nothing can progress (3), so nothing could ever exit 7.
const (
	ExitOK         = 0
	ExitFatal      = 1
	ExitCheckpoint = 2
	ExitInvalid    = 3
	ExitDepError   = 4
	ExitExhausted  = 5
	ExitNoDone     = 6
	ExitParked     = 8
	ExitBudget     = 9
	ExitUsage      = 64
	ExitSIGINT     = 130
	ExitSIGTERM    = 143
)

var ExitTable = []struct {
	Code int
	Text string
}{
	{ExitOK, "all phases merged (or the command succeeded)"},
	{ExitFatal, "fatal: not a repository, refused base branch, already running, git or I/O error"},
	{ExitCheckpoint, "stopped at a LOOP-CHECKPOINT marker, or a worker exited 2 (a checkpoint)"},
	{ExitInvalid, "invalid or missing manifest, an unreadable settings file, or nothing can progress"},
	{ExitDepError, "a worker reported a dependency error (exited 4)"},
	{ExitExhausted, "halted: a phase exhausted its supervisor attempts or review rounds"},
	{ExitNoDone, "halted: a phase never produced its DONE_ doc and its repairs could not make it"},
	{ExitParked, "keep-going finished with parked ([blocked]) phases"},
	{ExitBudget, "RUN_MAX_COST_USD reached: running attempts finished, nothing new started"},
	{ExitUsage, "flag or argument misuse"},
	{ExitSIGINT, "interrupted by SIGINT (Ctrl-C)"},
	{ExitSIGTERM, "terminated by SIGTERM"},
}

func PrintExitCodes(w io.Writer) {
	fmt.Fprintln(w, "Exit codes:")
	for _, e := range ExitTable {
		fmt.Fprintf(w, "  %3d  %s\n", e.Code, e.Text)
	}
}

// UsageError is flag or argument misuse (exit 64).
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

func UsageErrorf(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...)}
}

// ExitCode maps a command's error, and the signal that stopped it if any,
// to the process exit code.
func ExitCode(err error, sig os.Signal) int {
	if err == nil || errors.Is(err, ErrHelpShown) {
		return ExitOK
	}
	var (
		usage *UsageError
		halt  *scheduler.HaltError
	)
	var set *settings.Error
	switch {
	case errors.As(err, &usage):
		return ExitUsage
	case sig == syscall.SIGTERM:
		return ExitSIGTERM
	case sig != nil || errors.Is(err, scheduler.ErrInterrupted):
		return ExitSIGINT
	// Every problem is reported at once: an invalid manifest or an
	// unreadable settings file among them makes it 3, bad values alone
	// are misuse (64).
	case roadmap.IsInvalid(err), errors.Is(err, scheduler.ErrNoProgress), errors.As(err, &set) && set.Unreadable():
		return ExitInvalid
	case set != nil, errors.As(err, new(*settings.BuildError)):
		return ExitUsage
	case errors.Is(err, scheduler.ErrCheckpoint):
		return ExitCheckpoint
	case errors.As(err, &halt):
		switch {
		case halt.Reason == state.ReasonCheckpoint:
			return ExitCheckpoint
		case halt.Reason == state.ReasonDeps:
			return ExitDepError
		case halt.Reason == state.ReasonNoDone, halt.NoDone:
			return ExitNoDone
		}
		return ExitExhausted
	case errors.Is(err, scheduler.ErrParked):
		return ExitParked
	case errors.Is(err, scheduler.ErrBudget):
		return ExitBudget
	case errors.Is(err, worktree.ErrNotRepo):
		return ExitFatal
	}
	return ExitFatal
}

// IsSilent is true for errors whose story was already told on screen.
func IsSilent(err error) bool {
	return errors.Is(err, ErrHelpShown) || errors.Is(err, scheduler.ErrParked) ||
		errors.As(err, new(*scheduler.HaltError)) || errors.Is(err, scheduler.ErrCheckpoint)
}

// FormatError renders an error for stderr as "claudopilot: <what>: <why>",
// one line per problem when several are reported at once. An invalid
// roadmap and an unreadable settings line are already "path:line:
// message".
func FormatError(err error) string {
	var usage *UsageError
	if errors.As(err, &usage) {
		return "claudopilot: " + usage.msg
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var lines []string
		for _, e := range j.Unwrap() {
			lines = append(lines, FormatError(e))
		}
		return strings.Join(lines, "\n")
	}
	var set *settings.Error
	var miss *settings.MissingError
	if errors.As(err, &miss) {
		set = &settings.Error{Problems: miss.Problems}
	}
	if set != nil || errors.As(err, &set) {
		lines := make([]string, len(set.Problems))
		for i, p := range set.Problems {
			lines[i] = p.String()
			if !p.Unreadable {
				lines[i] = "claudopilot: " + lines[i]
			}
		}
		return strings.Join(lines, "\n")
	}
	if roadmap.IsInvalid(err) {
		return err.Error()
	}
	return "claudopilot: " + err.Error()
}

// Exit reports err on w (unless its story was already told on screen) and
// returns the process's exit code for it and the signal that stopped the
// command, if any.
func Exit(w io.Writer, err error, sig os.Signal) int {
	if err != nil && !IsSilent(err) {
		fmt.Fprintln(w, FormatError(err))
	}
	return ExitCode(err, sig)
}
