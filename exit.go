package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/worktree"
)

// Exit codes. Run outcomes keep Claudopilot's numbers so scripts written for
// it keep working; this is the only place an error becomes a number.
const (
	exitOK         = 0
	exitFatal      = 1
	exitCheckpoint = 2
	exitInvalid    = 3
	exitDepError   = 4
	exitExhausted  = 5
	exitNoDone     = 6
	exitIterLimit  = 7
	exitParked     = 8
	exitBudget     = 9
	exitUsage      = 64
	exitSIGINT     = 130
	exitSIGTERM    = 143
)

var exitTable = []struct {
	code int
	text string
}{
	{exitOK, "all phases merged (or the command succeeded)"},
	{exitFatal, "fatal: not a repository, refused base branch, already running, git or I/O error"},
	{exitCheckpoint, "stopped at a LOOP-CHECKPOINT marker"},
	{exitInvalid, "invalid or missing manifest, an unreadable settings file, or nothing can progress"},
	{exitDepError, "a worker reported a dependency error"},
	{exitExhausted, "halted: a phase exhausted its supervisor attempts or review rounds"},
	{exitNoDone, "halted: a phase never produced its DONE_ doc"},
	{exitIterLimit, "iteration limit reached"},
	{exitParked, "keep-going finished with parked ([blocked]) phases"},
	{exitBudget, "RUN_MAX_COST_USD reached: running attempts finished, nothing new started"},
	{exitUsage, "flag or argument misuse"},
	{exitSIGINT, "interrupted by SIGINT (Ctrl-C)"},
	{exitSIGTERM, "terminated by SIGTERM"},
}

func printExitCodes(w io.Writer) {
	fmt.Fprintln(w, "Exit codes:")
	for _, e := range exitTable {
		fmt.Fprintf(w, "  %3d  %s\n", e.code, e.text)
	}
}

// usageError is flag or argument misuse.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitCode maps a command's error, and the signal that stopped it if any,
// to the process exit code.
func exitCode(err error, sig os.Signal) int {
	if err == nil || errors.Is(err, errHelpShown) {
		return exitOK
	}
	var (
		usage *usageError
		halt  *scheduler.HaltError
	)
	var set *settings.Error
	switch {
	case errors.As(err, &usage):
		return exitUsage
	case sig == syscall.SIGTERM:
		return exitSIGTERM
	case sig != nil || errors.Is(err, scheduler.ErrInterrupted):
		return exitSIGINT
	// Every problem is reported at once: an invalid manifest or an
	// unreadable settings file among them makes it 3, bad values alone
	// are misuse (64).
	case roadmap.IsInvalid(err), errors.Is(err, scheduler.ErrNoProgress), errors.As(err, &set) && set.Unreadable():
		return exitInvalid
	case set != nil, errors.As(err, new(*engine.SettingsError)):
		return exitUsage
	case errors.Is(err, scheduler.ErrCheckpoint):
		return exitCheckpoint
	case errors.As(err, &halt):
		if halt.Reason == scheduler.ReasonNoDone {
			return exitNoDone
		}
		return exitExhausted
	case errors.Is(err, scheduler.ErrParked):
		return exitParked
	case errors.Is(err, scheduler.ErrBudget):
		return exitBudget
	case errors.Is(err, worktree.ErrNotRepo):
		return exitFatal
	}
	return exitFatal
}

// isSilent is true for errors whose story was already told on screen.
func isSilent(err error) bool {
	return errors.Is(err, errHelpShown) || errors.Is(err, scheduler.ErrParked) ||
		errors.As(err, new(*scheduler.HaltError)) || errors.Is(err, scheduler.ErrCheckpoint)
}

// formatError renders an error for stderr as "claudopilot: <what>: <why>",
// one line per problem when several are reported at once. An invalid
// roadmap and an unreadable settings line are already "path:line:
// message".
func formatError(err error) string {
	var usage *usageError
	if errors.As(err, &usage) {
		return "claudopilot: " + usage.msg
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var lines []string
		for _, e := range j.Unwrap() {
			lines = append(lines, formatError(e))
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
