// Package migrate is `claudopilot migrate`: another tool's settings files
// (Claudopilot v0.x/v1.0, issue-pilot) into claudopilot.config.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/settings"
)

const about = `
Write claudopilot.config from the settings files of the tools claudopilot
replaces, read exactly as a run reads them: Claudopilot 1.0's
.claudopilot/config.json, v0.x's .claudopilot/config.sh and
claudopilot.config.sh (or the file CLAUDOPILOT_CONFIG names), and
issue-pilot.conf (or ISSUE_PILOT_CONF, $ISSUE_PILOT_HOME/issue-pilot.conf).
A setting set in several files is taken from the first in that order.

It prints what it took, what it renamed (POLL_SECS is written as
POLL_SECONDS, ...) and what it dropped, and why. The old files are never
changed or deleted; claudopilot reads them too, after claudopilot.config.
An existing claudopilot.config is never overwritten (exit 1). --dry-run
prints the file instead of writing it. docs/migrating.md lists every
setting, command, file and exit code of the three tools.`

// Options are what migrate's flags say.
type Options struct {
	App    *cmdutil.App
	DryRun bool
}

// NewCmd is `claudopilot migrate`; runF runs the parsed options (Run when
// nil).
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("migrate", "write claudopilot.config from Claudopilot's or issue-pilot's settings files", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "migrate", "migrate [--dry-run]", about, "  claudopilot migrate --dry-run\n  claudopilot migrate && claudopilot doctor")
	dry := fs.Bool("dry-run", false, "print claudopilot.config and the report; write nothing")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, cmdutil.UsageErrorf("migrate takes no arguments, got %q", fs.Arg(0))
	}
	return &Options{App: a, DryRun: *dry}, nil
}

// Run reads the old files, reports, and writes claudopilot.config at the
// repository's top level (never over an existing one).
func Run(ctx context.Context, o *Options) error {
	a := o.App
	top, err := cmdutil.GitTopLevel(ctx, a, a.Cwd)
	if err != nil {
		return fmt.Errorf("migrate: %s is not inside a git repository: %w", a.Cwd, err)
	}
	m, err := settings.Migrate(top, a.Env)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	report(a.S.Out, m)
	path := filepath.Join(top, settings.ConfigFile)
	if o.DryRun {
		fmt.Fprintf(a.S.Out, "\n--dry-run: %s would be:\n\n%s", cmdutil.RelTo(a.Cwd, path), m.Config)
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("migrate: %s exists already; migrate never overwrites it", path)
	}
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	_, werr := f.WriteString(m.Config)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(path)
		return fmt.Errorf("migrate: %w", werr)
	}
	fmt.Fprintf(a.S.Out, "\nwrote %s; the old files are kept. Next: claudopilot doctor\n", cmdutil.RelTo(a.Cwd, path))
	return nil
}

func report(w io.Writer, m *settings.Migration) {
	for _, part := range []struct {
		title string
		lines []string
	}{{"took", m.Took}, {"renamed", m.Renamed}, {"dropped", m.Dropped}} {
		fmt.Fprintf(w, "%s (%d):\n", part.title, len(part.lines))
		for _, l := range part.lines {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
}
