package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// app is what every command gets: streams, the environment as given, and the
// working directory. Nothing below main reads os.Getenv.
type app struct {
	s   *Streams
	env map[string]string
	cwd string
}

func (a *app) getenv(k string) string { return a.env[k] }

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, a *app, args []string) error
	hidden  bool
}

func commands() []command {
	return []command{
		{name: "init", summary: "scaffold a roadmap, claudopilot.config and the .claudopilot/ exclude here", run: cmdInit},
		{name: "plan", summary: "validate a roadmap and print its waves, critical path and what can start", run: cmdPlan},
		{name: "run", summary: "run every eligible phase in its own worktree and merge green work", run: cmdRun},
		{name: "queue", summary: "work the GitHub issue queue: issues labelled agent-ready, as nodes of the graph", run: cmdQueue},
		{name: "status", summary: "show each phase's state, attempts, reason and log, and what runs now", run: cmdStatus},
		{name: "logs", summary: "print or follow a phase's logs", run: cmdLogs},
		{name: "explain", summary: "say why a phase is not running", run: cmdExplain},
		{name: "retry", summary: "flip [blocked] or [failed] phases back to [pending]", run: cmdRetry},
		{name: "pause", summary: "stop new launches (running agents finish); holds across restarts", run: cmdPause},
		{name: "resume", summary: "let a paused run launch again", run: cmdResume},
		{name: "drain", summary: "ask the running driver to finish what runs, merge it, and stop", run: cmdDrain},
		{name: "lanes", summary: "show each lane's usage, want and concurrency (one pacer pass)", run: cmdLanes},
		{name: "lane", summary: "switch a lane on or off", run: cmdLane},
		{name: "doctor", summary: "check git, settings, agent, manifest and leftovers, with a fix for each problem", run: cmdDoctor},
		{name: "clean", summary: "remove worktrees and branches of merged phases, stale registrations and a stale lock", run: cmdClean},
		{name: "demo", summary: "run an example roadmap in a temporary repository", run: cmdDemo},
		{name: "completion", summary: "print a bash, zsh or fish completion script", run: cmdCompletion},
		{name: "version", summary: "print the version and commit", run: cmdVersion},
		{name: "help", summary: "show help for a command", run: cmdHelp},
	}
}

func run(ctx context.Context, args []string, s *Streams, environ []string) error {
	a := &app{s: s, env: envMap(environ)}
	var err error
	if a.cwd, err = os.Getwd(); err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	if len(args) == 0 {
		printTopHelp(a)
		return usageErrorf("no command given")
	}
	name := args[0]
	switch name {
	case "-h", "--help":
		printTopHelp(a)
		return nil
	case "-v", "--version":
		return cmdVersion(ctx, a, nil)
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, a, args[1:])
		}
	}
	return usageErrorf("unknown command %q (run 'claudopilot help' for the list)", name)
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func printTopHelp(a *app) {
	w := a.s.Out
	fmt.Fprint(w, `claudopilot runs a roadmap of phases as a dependency graph: an AI coding
agent works on every eligible phase at once, each in its own git worktree and
branch; green work is merged into the base branch one phase at a time.

Usage:
  claudopilot <command> [flags] [args]

Commands:
`)
	for _, c := range commands() {
		if !c.hidden {
			fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
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

func cmdHelp(ctx context.Context, a *app, args []string) error {
	if len(args) == 0 {
		printTopHelp(a)
		return nil
	}
	if args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(a.s.Out, `Usage: claudopilot help [COMMAND|exit-codes]

Show the list of commands, a command's help (the same as
'claudopilot COMMAND --help'), or the exit codes.

Example:
  claudopilot help run
  claudopilot help exit-codes
`)
		return nil
	}
	if args[0] == "exit-codes" {
		printExitCodes(a.s.Out)
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] && c.name != "help" {
			return c.run(ctx, a, []string{"--help"})
		}
	}
	return usageErrorf("unknown help topic %q", args[0])
}

// newFlags makes a command's flag set. Its usage text is the command's
// synopsis, the flags, and an example: what --help shows.
func newFlags(a *app, name, synopsis, about, example string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(a.s.Err)
	fs.SortFlags = false
	fs.Usage = func() {
		w := a.s.Out
		fmt.Fprintf(w, "Usage: claudopilot %s\n\n%s\n", synopsis, strings.TrimSpace(about))
		if fs.HasFlags() {
			fmt.Fprintf(w, "\nFlags:\n%s", fs.FlagUsages())
		}
		fmt.Fprintf(w, "\nExample:\n%s\n", example)
	}
	return fs
}

// parseFlags parses args; --help prints the usage and ends the command with
// success (errHelpShown), and misuse becomes a usage error (exit 64).
func parseFlags(fs *pflag.FlagSet, args []string) error {
	fs.SetOutput(discard{})
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errHelpShown // pflag has printed the usage
		}
		return usageErrorf("%s: %v (see 'claudopilot %s --help')", fs.Name(), err, fs.Name())
	}
	return nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

var errHelpShown = errors.New("help shown")
