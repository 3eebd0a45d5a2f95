// Package demo is `claudopilot demo`: the example roadmap in a new
// repository, run with the built-in script agent.
package demo

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/claudopilot/claudopilot/examples"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/internal/cli/run"
	"github.com/claudopilot/claudopilot/settings"
)

// Options are what demo's flags say.
type Options struct {
	App         *cmdutil.App
	Dir         string // "": a temporary folder
	MaxParallel string
	JSON        bool
}

// NewCmd is `claudopilot demo`; runF runs the parsed options (Run when
// nil).
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("demo", "run an example roadmap in a temporary repository", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "demo", "demo [--dir DIR] [--max-parallel N] [--json]", `
Make a temporary git repository holding an example roadmap of eight phases
(one fans out to three, each has a follow-up, and one fans back in), run it
with the built-in script agent, and say where the repository is so you can
look at the merge commits it made.

No AI tool is needed: the script agent runs the first sh block of each phase
doc in the phase's worktree and, when it exits 0, renames the doc to DONE_.
The demo repository has its own git identity, so it works on a machine where
git has none configured.`,
		"  claudopilot demo\n  claudopilot demo --dir /tmp/cp-demo --max-parallel 2")
	dir := fs.String("dir", "", "make the repository here (an empty or missing folder) instead of a temporary one")
	par := fs.String("max-parallel", "3", "agents running at once")
	jsonOut := fs.Bool("json", false, "print one JSON event per line on stdout instead of progress")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, cmdutil.UsageErrorf("demo takes no arguments")
	}
	return &Options{App: a, Dir: *dir, MaxParallel: *par, JSON: *jsonOut}, nil
}

// Run makes the demo repository and runs its roadmap with the built-in
// script agent, whatever settings the caller's environment holds.
func Run(ctx context.Context, o *Options) error {
	a, repo := o.App, o.Dir
	if repo == "" {
		tmp, err := os.MkdirTemp("", "claudopilot-demo-")
		if err != nil {
			return err
		}
		repo = tmp
	} else {
		if !filepath.IsAbs(repo) {
			repo = filepath.Join(a.Cwd, repo)
		}
		if ents, err := os.ReadDir(repo); err == nil && len(ents) > 0 {
			return cmdutil.UsageErrorf("demo: %s is not empty", repo)
		}
	}
	if err := makeDemoRepo(ctx, repo, a); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	fmt.Fprintf(a.S.Err, "claudopilot demo: running an 8-phase roadmap in %s\n", repo)
	sub := *a
	sub.Cwd = repo
	sub.Env = make(map[string]string, len(a.Env))
	for k, v := range a.Env {
		// The demo's settings are its own: a KEEP_GOING or AGENT_CMD in
		// the caller's environment must not change it.
		if _, knob := settings.Lookup(k); !knob && !strings.HasPrefix(k, "CLAUDOPILOT_") {
			sub.Env[k] = v
		}
	}
	sub.Env["AGENT_CMD"] = "script"
	sub.Env["MAX_PARALLEL"] = o.MaxParallel
	sub.Env["BASE_BRANCH"] = "main"
	err := run.Run(ctx, &run.Options{App: &sub, Dir: filepath.Join(repo, "roadmap"), JSON: o.JSON})
	// With --json, stdout holds JSON lines only.
	out := a.S.Out
	if o.JSON {
		out = a.S.Err
	}
	fmt.Fprintf(out, "\nThe demo repository is %s\n  git -C %s log --graph --oneline\n", repo, repo)
	return err
}

// makeDemoRepo writes the example into dir and commits it on main, with a
// git identity of the repository's own.
func makeDemoRepo(ctx context.Context, dir string, a *cmdutil.App) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sub, err := fs.Sub(examples.Demo, "demo")
	if err != nil {
		return err
	}
	if err := os.CopyFS(dir, sub); err != nil {
		return err
	}
	env := a.GitEnv()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"config", "user.name", "claudopilot demo"},
		{"config", "user.email", "demo@claudopilot.invalid"},
		{"add", "-A"},
		{"commit", "-q", "-m", "demo: roadmap"},
	} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}
