// Package web is `claudopilot web`: a fresh login URL for the page the
// running driver serves.
package web

import (
	"context"
	"fmt"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
)

// Options are web's: none but the streams.
type Options struct {
	App *cmdutil.App
}

// NewCmd is `claudopilot web`; runF runs the parsed options (Run when nil).
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("web", "print a fresh login URL for the running driver's web page", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "web", "web", `
Print a new one-time login URL for the page the running driver serves
(run or queue with --listen, docs/web.md). The URL the driver printed at
start works once; this one works once too, and there is no limit on how
many you print. It asks the driver over its API with the token in
.claudopilot/state/web-token, so it works only where that file is
readable. Exit 1 when no driver serves a page here.`, "  claudopilot web")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, cmdutil.UsageErrorf("web takes no arguments")
	}
	return &Options{App: a}, nil
}

// Run prints the login URL.
func Run(ctx context.Context, o *Options) error {
	_, dir, err := cmdutil.StateDirOf(ctx, o.App, o.App.Cwd)
	if err != nil {
		return err
	}
	url, err := engine.WebLogin(ctx, dir)
	if err != nil {
		return fmt.Errorf("web: %w", err)
	}
	fmt.Fprintln(o.App.S.Out, url)
	return nil
}
