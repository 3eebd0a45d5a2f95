// Package pause is `claudopilot pause`, `resume` and `drain`: the switches
// a running driver takes within a second.
package pause

import (
	"context"
	"errors"
	"fmt"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/state"
)

// Options are the switch's: none but the streams, and which way.
type Options struct {
	App    *cmdutil.App
	Paused bool // pause (true) or resume (false); drain ignores it
}

// NewCmdPause is `claudopilot pause`; runF runs the parsed options
// (SetPaused when nil).
func NewCmdPause(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("pause", "stop new launches (running agents finish); holds across restarts", parser(true), SetPaused, runF)
}

// NewCmdResume is `claudopilot resume`.
func NewCmdResume(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("resume", "let a paused run launch again", parser(false), SetPaused, runF)
}

// NewCmdDrain is `claudopilot drain`; runF runs the parsed options (Drain
// when nil).
func NewCmdDrain(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("drain", "ask the running driver to finish what runs, merge it, and stop", parseDrain, Drain, runF)
}

func parseDrain(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "drain", "drain", `
Ask the running driver to finish what runs and stop: no new launches;
running agents finish, their work is checked and merged, then the run ends
with exit 0 and its summary. Phases not started stay as they are for the
next run. Without a running driver there is nothing to drain.`, "  claudopilot drain")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, cmdutil.UsageErrorf("drain takes no arguments")
	}
	return &Options{App: a}, nil
}

// Drain asks the running driver to finish what runs and stop.
func Drain(ctx context.Context, o *Options) error {
	a := o.App
	git, dir, err := cmdutil.StateDirOf(ctx, a, a.Cwd)
	if err != nil {
		return err
	}
	common, err := git.CommonDir(ctx)
	if err != nil {
		return err
	}
	info, ok := state.LockHeld(state.LockPath(common))
	if !ok {
		return errors.New("drain: no driver is running here")
	}
	if err := engine.SetDrain(dir); err != nil {
		return err
	}
	fmt.Fprintf(a.S.Out, "draining: the driver (pid %d) finishes what runs, then stops\n", info.PID)
	return nil
}

// parser parses pause's (paused) or resume's arguments.
func parser(paused bool) func(context.Context, *cmdutil.App, []string) (*Options, error) {
	return func(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
		return parseSwitch(a, args, paused)
	}
}

func parseSwitch(a *cmdutil.App, args []string, paused bool) (*Options, error) {
	name, what := "resume", "Let a paused run launch agents again."
	if paused {
		name, what = "pause", "Stop new launches: running agents finish and their work still merges;\nnothing new starts until `claudopilot resume`."
	}
	fs := cmdutil.NewFlags(a, name, name, what+`

The switch is a file under .claudopilot/state, so it reaches a running
driver within a second and holds across restarts: a driver started while
paused waits.`, "  claudopilot "+name)
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, cmdutil.UsageErrorf("%s takes no arguments", name)
	}
	return &Options{App: a, Paused: paused}, nil
}

// SetPaused switches launches off (Paused) or on again, for a running
// driver and the next one.
func SetPaused(ctx context.Context, o *Options) error {
	a, paused := o.App, o.Paused
	git, dir, err := cmdutil.StateDirOf(ctx, a, a.Cwd)
	if err != nil {
		return err
	}
	if err := engine.SetPaused(dir, paused); err != nil {
		return err
	}
	fmt.Fprintf(a.S.Out, "%s%s\n", map[bool]string{true: "paused", false: "resumed"}[paused], cmdutil.DriverNote(ctx, git))
	return nil
}
