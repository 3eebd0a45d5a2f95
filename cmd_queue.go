package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/claudopilot/claudopilot/issues"
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

func cmdQueue(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "queue", "queue [--repo owner/name] [ROADMAP_DIR] [flags]", queueAbout, queueExample)
	settings.AddFlags(fs, settings.ForScope(settings.Queue))
	once := fs.Bool("once", false, "work the current queue, then exit (default: keep polling every POLL_SECONDS)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usageErrorf("queue takes at most one ROADMAP_DIR, got %d", fs.NArg())
	}
	if err := settings.CheckFlags(fs, settings.Queue); err != nil {
		return err
	}
	git, err := worktree.Open(ctx, a.cwd, gitEnv(a))
	if err != nil {
		if errors.Is(err, worktree.ErrNotRepo) {
			return fmt.Errorf("%s is not inside a git repository (the queue works in a clone of the repository): %w", a.cwd, err)
		}
		return err
	}
	// A roadmap, if there is one, provides the phases issues may depend on,
	// and runs beside the queue.
	dir, err := findRoadmapDir(ctx, a, fs.Arg(0))
	if err != nil {
		return err
	}
	manifestPath := filepath.Join(dir, roadmap.ManifestName)
	// One process, one lock, one engine: beside the roadmap's phases, or
	// alone (an empty roadmap, no local merger); the same retry policy,
	// slots, lanes, review gate and base rule either way.
	if _, err := os.Stat(manifestPath); err == nil {
		return runRoadmap(ctx, a, runOptions{dir: dir, flags: fs, issues: true, once: *once})
	} else if fs.Arg(0) != "" {
		return &roadmap.InvalidError{Path: manifestPath, Problems: []roadmap.Problem{{Msg: "manifest not found"}}}
	}
	return runRoadmap(ctx, a, runOptions{dir: git.Dir, flags: fs, issues: true, once: *once, alone: true})
}

// noteQueuePolicy announces the queue's changed retry defaults until the
// user sets either knob: a queue alone used to repair red checks 3 times
// and retry passing API errors 3 times; it now keeps run's policy.
func noteQueuePolicy(a *app, s *settings.Settings) {
	if s.Source("MAX_SUPERVISOR_ATTEMPTS_PER_PHASE").Kind != settings.FromDefault || s.Source("TRANSIENT_API_MAX_RETRIES").Kind != settings.FromDefault {
		return
	}
	fmt.Fprintf(a.s.Err, "claudopilot: note: the queue retries as run does: %d repair runs per issue (MAX_SUPERVISOR_ATTEMPTS_PER_PHASE, was 3) and %d retries of passing API errors (TRANSIENT_API_MAX_RETRIES, was 3); set either to hide this note\n",
		s.MaxSupervisor, s.TransientRetries)
}

func printQueueSummary(w io.Writer, sum issues.Summary) {
	for _, r := range sum.Results {
		switch r.Kind {
		case issues.Merged:
			fmt.Fprintf(w, "#%d merged (pull request #%d)\n", r.Number, r.PR)
		case issues.Review:
			fmt.Fprintf(w, "#%d ready for review (pull request #%d)\n", r.Number, r.PR)
		case issues.Blocked:
			fmt.Fprintf(w, "#%d blocked: %s\n", r.Number, r.Reason)
		case issues.Dropped:
			fmt.Fprintf(w, "#%d dropped: %s\n", r.Number, r.Reason)
		case issues.Interrupted:
			fmt.Fprintf(w, "#%d interrupted; claim released\n", r.Number)
		}
	}
	for _, n := range sum.Skipped {
		fmt.Fprintf(w, "#%d skipped: not trusted\n", n)
	}
	for _, n := range sum.Released {
		fmt.Fprintf(w, "#%d: stale claim released\n", n)
	}
	fmt.Fprintf(w, "queue: %d merged, %d for review, %d blocked\n", sum.Count(issues.Merged), sum.Count(issues.Review), sum.Count(issues.Blocked))
}
