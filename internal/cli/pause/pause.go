// Package pause is `claudopilot pause`, `resume` and `drain`: the switches
// a running driver takes within a second.
package pause

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/state"
)

func Drain(ctx context.Context, a *cmdutil.App, args []string) error {
	fs := cmdutil.NewFlags(a, "drain", "drain", `
Ask the running driver to finish what runs and stop: no new launches;
running agents finish, their work is checked and merged, then the run ends
with exit 0 and its summary. Phases not started stay as they are for the
next run. Without a running driver there is nothing to drain.`, "  claudopilot drain")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cmdutil.UsageErrorf("drain takes no arguments")
	}
	git, dir, err := cmdutil.StateDirOf(ctx, a, a.Cwd)
	if err != nil {
		return err
	}
	common, err := git.CommonDir(ctx)
	if err != nil {
		return err
	}
	info, ok := state.LockHeld(filepath.Join(common, "claudopilot.lock"))
	if !ok {
		return errors.New("drain: no driver is running here")
	}
	if err := engine.SetDrain(dir); err != nil {
		return err
	}
	fmt.Fprintf(a.S.Out, "draining: the driver (pid %d) finishes what runs, then stops\n", info.PID)
	return nil
}

func Pause(ctx context.Context, a *cmdutil.App, args []string) error {
	return setPaused(ctx, a, args, true)
}

func Resume(ctx context.Context, a *cmdutil.App, args []string) error {
	return setPaused(ctx, a, args, false)
}

func setPaused(ctx context.Context, a *cmdutil.App, args []string, paused bool) error {
	name, what := "resume", "Let a paused run launch agents again."
	if paused {
		name, what = "pause", "Stop new launches: running agents finish and their work still merges;\nnothing new starts until `claudopilot resume`."
	}
	fs := cmdutil.NewFlags(a, name, name, what+`

The switch is a file under .claudopilot/state, so it reaches a running
driver within a second and holds across restarts: a driver started while
paused waits.`, "  claudopilot "+name)
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cmdutil.UsageErrorf("%s takes no arguments", name)
	}
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
