// Package root is the command tree: the list of commands, each in its own
// package under internal/cli, the top-level help, and the dispatch of one
// command line. Main (package main calls it) wires the process's streams
// and signals to Run.
package root

import (
	"context"
	"fmt"
	"os"

	"github.com/claudopilot/claudopilot/internal/cli/answer"
	"github.com/claudopilot/claudopilot/internal/cli/attach"
	"github.com/claudopilot/claudopilot/internal/cli/clean"
	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/internal/cli/completion"
	"github.com/claudopilot/claudopilot/internal/cli/demo"
	"github.com/claudopilot/claudopilot/internal/cli/doctor"
	"github.com/claudopilot/claudopilot/internal/cli/explain"
	"github.com/claudopilot/claudopilot/internal/cli/initcmd"
	"github.com/claudopilot/claudopilot/internal/cli/kubewire"
	"github.com/claudopilot/claudopilot/internal/cli/lanes"
	"github.com/claudopilot/claudopilot/internal/cli/logs"
	"github.com/claudopilot/claudopilot/internal/cli/migrate"
	"github.com/claudopilot/claudopilot/internal/cli/pause"
	"github.com/claudopilot/claudopilot/internal/cli/plan"
	"github.com/claudopilot/claudopilot/internal/cli/promote"
	"github.com/claudopilot/claudopilot/internal/cli/queue"
	"github.com/claudopilot/claudopilot/internal/cli/report"
	"github.com/claudopilot/claudopilot/internal/cli/retry"
	"github.com/claudopilot/claudopilot/internal/cli/run"
	"github.com/claudopilot/claudopilot/internal/cli/scanners"
	"github.com/claudopilot/claudopilot/internal/cli/status"
	"github.com/claudopilot/claudopilot/internal/cli/version"
	"github.com/claudopilot/claudopilot/internal/cli/web"
	"github.com/claudopilot/claudopilot/launch"
)

// Commands is the command tree, in the order help lists it.
func Commands() []cmdutil.Command {
	return []cmdutil.Command{
		initcmd.NewCmd(nil),
		plan.NewCmd(nil),
		run.NewCmd(nil),
		queue.NewCmd(nil),
		status.NewCmd(nil),
		logs.NewCmd(nil),
		explain.NewCmd(nil),
		report.NewCmd(nil),
		retry.NewCmd(nil),
		answer.NewCmd(nil),
		attach.NewCmd(nil),
		pause.NewCmdPause(nil),
		pause.NewCmdResume(nil),
		pause.NewCmdDrain(nil),
		lanes.NewCmd(nil),
		lanes.NewCmdLane(nil),
		web.NewCmd(nil),
		scanners.NewCmd(nil),
		promote.NewCmd(nil),
		doctor.NewCmd(nil),
		migrate.NewCmd(nil),
		clean.NewCmd(nil),
		demo.NewCmd(nil),
		completion.NewCmd(nil),
		version.NewCmd(nil),
		{Name: "help", Summary: "show help for a command", Run: help},
	}
}

// Launch prepares the process before anything else runs: the token leaves
// its environment (a re-exec hands it over a pipe) and the process becomes
// non-dumpable, so agents cannot read it from /proc (package launch). It
// returns the environment the commands get.
func Launch(environ []string) ([]string, error) { return launch.Hide(environ) }

// Run runs one command line with the streams s and the environment as
// given; the error it returns becomes the exit code in one place
// (cmdutil.ExitCode).
func Run(ctx context.Context, args []string, s *cmdutil.Streams, environ []string) error {
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	return RunIn(ctx, cwd, args, s, environ)
}

// RunIn is Run in the working directory cwd (absolute) instead of the
// process's: nothing below it reads the process's own (cmdutil.App.Cwd),
// so the end-to-end scripts run short commands in their test process,
// several at once, without a driver start each (internal/e2e, #23).
func RunIn(ctx context.Context, cwd string, args []string, s *cmdutil.Streams, environ []string) error {
	// The one Kubernetes runner, injected here: only the binary links
	// k8s.io, not the commands' own packages (issue 23).
	a := &cmdutil.App{S: s, Env: cmdutil.EnvMap(environ), Cwd: cwd, Commands: Commands, Cluster: kubewire.Cluster{}, Repos: &cmdutil.Repos{}}
	if len(args) == 0 {
		printTopHelp(a)
		return cmdutil.UsageErrorf("no command given")
	}
	name := args[0]
	switch name {
	case "-h", "--help":
		printTopHelp(a)
		return nil
	case "-v", "--version":
		return version.NewCmd(nil).Run(ctx, a, nil)
	}
	for _, c := range Commands() {
		if c.Name == name {
			return c.Run(ctx, a, args[1:])
		}
	}
	return cmdutil.UsageErrorf("unknown command %q (run 'claudopilot help' for the list)", name)
}

func printTopHelp(a *cmdutil.App) {
	w := a.S.Out
	fmt.Fprint(w, `claudopilot runs a roadmap of phases as a dependency graph: an AI coding
agent works on every eligible phase at once, each in its own git worktree and
branch; green work is merged into the base branch one phase at a time.

Usage:
  claudopilot <command> [flags] [args]

Commands:
`)
	for _, c := range Commands() {
		if !c.Hidden {
			fmt.Fprintf(w, "  %-11s %s\n", c.Name, c.Summary)
		}
	}
	fmt.Fprint(w, `
Examples:
  claudopilot demo                       # watch it work on a built-in example
  claudopilot plan roadmap/              # check a roadmap, see its waves
  KEEP_GOING=1 claudopilot run roadmap/  # run all night, park what fails

Run 'claudopilot help <command>' or 'claudopilot <command> --help' for details.
Exit codes are listed in 'claudopilot help exit-codes'. Flag misuse exits 64.
`)
}

func help(ctx context.Context, a *cmdutil.App, args []string) error {
	if len(args) == 0 {
		printTopHelp(a)
		return nil
	}
	if args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(a.S.Out, `Usage: claudopilot help [COMMAND|exit-codes]

Show the list of commands, a command's help (the same as
'claudopilot COMMAND --help'), or the exit codes.

Example:
  claudopilot help run
  claudopilot help exit-codes
`)
		return nil
	}
	if args[0] == "exit-codes" {
		cmdutil.PrintExitCodes(a.S.Out)
		return nil
	}
	for _, c := range Commands() {
		if c.Name == args[0] && c.Name != "help" {
			return c.Run(ctx, a, []string{"--help"})
		}
	}
	return cmdutil.UsageErrorf("unknown help topic %q", args[0])
}
