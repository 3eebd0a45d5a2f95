// Package queue is `claudopilot queue`: the GitHub issue queue, alone or
// beside a roadmap, through the one engine.
package queue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/internal/cli/run"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/worktree"
)

const queueAbout = `
Work the GitHub issue queue: every open issue labelled READY_LABEL (by a
user with write access, or written by one of TRUSTED_AUTHORS) is a node
"#N" of the same dependency graph as a manifest's phases; its body is the
phase doc, and lines such as "Depends on #12", "Blocked by #12, #14" or
"Depends on phase-03" (or a task list under a "Dependencies" heading) are
its deps. An issue whose deps are done is claimed (CLAIM_LABEL, a "claimed
by" comment; exactly one instance wins, even across machines) and worked
like a roadmap phase, in a worktree on branch claudopilot/issue-N cut from
origin/<base>. The driver runs the gate, pushes the branch, opens a draft
pull request that closes the issue, and watches its checks: red checks go
to the repair supervisor (MAX_SUPERVISOR_ATTEMPTS_PER_PHASE runs, as for a
phase: one retry policy whatever the command), green ones are merged
(AUTO_MERGE) or marked ready for review (REVIEW_LABEL). Any failure sets BLOCKED_LABEL with
one comment saying why. Missing labels are created at startup.

The token (GITHUB_TOKEN, else GH_TOKEN) never reaches agents, and
everything posted to GitHub is scrubbed of it and of common secret shapes.
With a roadmap (ROADMAP_DIR, or ./roadmap found as for run), issues may
depend on its phases.

Settings come from flags, then the environment, then claudopilot.config,
then defaults. Each flag names its variable. See docs/queue.md.

Exit codes: 0 the queue was worked (--once) or the loop stopped cleanly;
1 fatal (no repository, no git identity, GitHub refused the token, already
running, polls keep failing with --once); 3 invalid roadmap; 64 flag or
setting misuse; 130/143 interrupted.`

const queueExample = `  GITHUB_TOKEN=… claudopilot queue --once
  claudopilot queue --repo acme/widgets --auto-merge --max-parallel 2
  GITHUB_API_URL=https://ghe.example.com/api/v3 claudopilot queue roadmap/`

// NewCmd is `claudopilot queue`: a run of the queue, alone or beside the
// roadmap, with the queue's flags (run.Options). runF runs the parsed
// options (run.Run when nil): a test of the flags passes its own.
func NewCmd(runF func(context.Context, *run.Options) error) cmdutil.Command {
	return cmdutil.NewCommand("queue", "work the GitHub issue queue: issues labelled agent-ready, as nodes of the graph", parse, run.Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*run.Options, error) {
	fs := cmdutil.NewFlags(a, "queue", "queue [--repo owner/name] [ROADMAP_DIR] [flags]", queueAbout, queueExample)
	settings.AddFlags(fs, settings.ForScope(settings.Queue))
	once := fs.Bool("once", false, "work the current queue, then exit (default: keep polling every POLL_SECONDS)")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 1 {
		return nil, cmdutil.UsageErrorf("queue takes at most one ROADMAP_DIR, got %d", fs.NArg())
	}
	if err := settings.CheckFlags(fs, settings.Queue); err != nil {
		return nil, err
	}
	git, err := a.OpenRepo(ctx, a.Cwd)
	if err != nil {
		if errors.Is(err, worktree.ErrNotRepo) {
			return nil, fmt.Errorf("%s is not inside a git repository (the queue works in a clone of the repository): %w", a.Cwd, err)
		}
		return nil, err
	}
	// A roadmap, if there is one, provides the phases issues may depend on,
	// and runs beside the queue.
	dir, err := cmdutil.FindRoadmapDir(ctx, a, fs.Arg(0))
	if err != nil {
		return nil, err
	}
	manifestPath := filepath.Join(dir, roadmap.ManifestName)
	// One process, one lock, one engine: beside the roadmap's phases, or
	// alone (an empty roadmap, no local merger); the same retry policy,
	// slots, lanes, review gate and base rule either way.
	o := &run.Options{App: a, Dir: dir, Flags: fs, Issues: true, Once: *once}
	if _, err := os.Stat(manifestPath); err == nil {
		return o, nil
	} else if fs.Arg(0) != "" {
		return nil, &roadmap.InvalidError{Path: manifestPath, Problems: []roadmap.Problem{{Msg: "manifest not found"}}}
	}
	o.Dir, o.Alone = git.Dir, true
	return o, nil
}
