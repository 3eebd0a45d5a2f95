package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/worktree"
)

func cmdRetry(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "retry", "retry ID... [--roadmap DIR] | retry --all-blocked", `
Flip [blocked] or [failed] phases back to [pending], so the next run (or the
run going on now, which watches the manifest) tries them again. The kept
branch and worktree are reused, brought up to date with the base first, and
the attempt counters start over. Phases parked only because they waited on
a retried phase are flipped back too.

Only the state tokens change; every other byte of the manifest stays. An
issue of the queue ("#12") is retried on GitHub, by its labels: retry says
which, changes nothing and exits 64.`,
		"  claudopilot retry phase-03\n  claudopilot retry --all-blocked --roadmap plans/q3")
	dirFlag := fs.String("roadmap", "", "the roadmap folder (default: ./roadmap, else ./.claudopilot/roadmap)")
	all := fs.Bool("all-blocked", false, "retry every [blocked] phase")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 && !*all {
		return usageErrorf("retry: name the phases to retry, or pass --all-blocked")
	}
	dir, err := findRoadmapDir(ctx, a, *dirFlag)
	if err != nil {
		return err
	}
	done, already, err := engine.Retry(ctx, dir, fs.Args(), *all)
	if oe := (*engine.OutsideRetryError)(nil); errors.As(err, &oe) {
		// Nothing changed: say where an issue is retried, with this
		// repository's labels.
		top := a.cwd
		if git, err := worktree.Open(ctx, dir, gitEnv(a)); err == nil {
			top = git.Dir
		}
		return usageErrorf("retry: %s is an issue, not a phase of the manifest, so nothing changed: %s", oe.ID, retryIssueText(a, top, oe.ID))
	}
	if err != nil {
		return err
	}
	for _, id := range already {
		// Flipped by hand already, as the docs invite: what retry
		// would do is done.
		fmt.Fprintf(a.s.Out, "%s is already [pending]: the next run starts it (a kept branch is brought up to date first)\n", id)
	}
	manifestPath := filepath.Join(dir, roadmap.ManifestName)
	if len(done) == 0 {
		if len(already) == 0 {
			fmt.Fprintln(a.s.Out, "nothing to retry: no phase is [blocked]")
		}
		return nil
	}
	rel, _ := filepath.Rel(a.cwd, manifestPath)
	fmt.Fprintf(a.s.Out, "retrying %s (now [pending] in %s)\n", strings.Join(done, ", "), rel)
	return nil
}
