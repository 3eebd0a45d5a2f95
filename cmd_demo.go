package main

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/claudopilot/claudopilot/settings"
)

//go:embed examples/demo
var demoFiles embed.FS

func cmdDemo(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "demo", "demo [--dir DIR] [--max-parallel N] [--json]", `
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
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("demo takes no arguments")
	}
	repo := *dir
	if repo == "" {
		tmp, err := os.MkdirTemp("", "claudopilot-demo-")
		if err != nil {
			return err
		}
		repo = tmp
	} else {
		if !filepath.IsAbs(repo) {
			repo = filepath.Join(a.cwd, repo)
		}
		if ents, err := os.ReadDir(repo); err == nil && len(ents) > 0 {
			return usageErrorf("demo: %s is not empty", repo)
		}
	}
	if err := makeDemoRepo(ctx, repo, a); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	fmt.Fprintf(a.s.Err, "claudopilot demo: running an 8-phase roadmap in %s\n", repo)
	sub := *a
	sub.cwd = repo
	sub.env = make(map[string]string, len(a.env))
	for k, v := range a.env {
		// The demo's settings are its own: a KEEP_GOING or AGENT_CMD in
		// the caller's environment must not change it.
		if _, knob := settings.Lookup(k); !knob && !strings.HasPrefix(k, "CLAUDOPILOT_") {
			sub.env[k] = v
		}
	}
	sub.env["AGENT_CMD"] = "script"
	sub.env["MAX_PARALLEL"] = *par
	sub.env["BASE_BRANCH"] = "main"
	err := runRoadmap(ctx, &sub, runOptions{dir: filepath.Join(repo, "roadmap"), json: *jsonOut})
	// With --json, stdout holds JSON lines only.
	out := a.s.Out
	if *jsonOut {
		out = a.s.Err
	}
	fmt.Fprintf(out, "\nThe demo repository is %s\n  git -C %s log --graph --oneline\n", repo, repo)
	return err
}

// makeDemoRepo writes the example into dir and commits it on main, with a
// git identity of the repository's own.
func makeDemoRepo(ctx context.Context, dir string, a *app) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sub, err := fs.Sub(demoFiles, "examples/demo")
	if err != nil {
		return err
	}
	if err := os.CopyFS(dir, sub); err != nil {
		return err
	}
	env := gitEnv(a)
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
