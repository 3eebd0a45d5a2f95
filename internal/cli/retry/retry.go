// Package retry is `claudopilot retry`: phases back to [pending], issues
// queued again on GitHub.
package retry

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/internal/cli/wire"
	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/settings"
)

// Options are what retry's flags and arguments say.
type Options struct {
	App   *cmdutil.App
	Dir   string   // the roadmap folder
	IDs   []string // phases, and issues "#12"
	All   bool     // --all-blocked
	Flags settings.Flags
}

// NewCmd is `claudopilot retry`; runF runs the parsed options (Run when
// nil).
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("retry", "flip [blocked] or [failed] phases back to [pending]", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "retry", "retry ID... [--roadmap DIR] [--repo owner/name] | retry --all-blocked", `
Flip [blocked] or [failed] phases back to [pending], so the next run (or the
run going on now, which watches the manifest) tries them again. The kept
branch and worktree are reused, brought up to date with the base first, and
the attempt counters start over. Phases parked only because they waited on
a retried phase are flipped back too.

Only the state tokens change; every other byte of the manifest stays.

An issue of the queue ("#12") is retried on GitHub, as a person would:
BLOCKED_LABEL comes off, READY_LABEL goes on, and one comment says
claudopilot retry queued it again; a running queue takes it up at its next
poll. The token, repository and labels are the queue's settings
(docs/queue.md). Only a blocked issue can be retried. Everything is checked
first: an id that cannot be retried changes nothing.`,
		"  claudopilot retry phase-03\n  claudopilot retry --all-blocked --roadmap plans/q3\n  GITHUB_TOKEN=… claudopilot retry '#12'")
	dirFlag := fs.String("roadmap", "", "the roadmap folder (default: ./roadmap, else ./.claudopilot/roadmap)")
	all := fs.Bool("all-blocked", false, "retry every [blocked] phase")
	settings.AddFlags(fs, settings.Only(settings.ForScope(settings.Queue), "GH_REPO"))
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() == 0 && !*all {
		return nil, cmdutil.UsageErrorf("retry: name the phases to retry, or pass --all-blocked")
	}
	dir, err := cmdutil.FindRoadmapDir(ctx, a, *dirFlag)
	if err != nil {
		return nil, err
	}
	return &Options{App: a, Dir: dir, IDs: fs.Args(), All: *all, Flags: fs}, nil
}

// Run retries the phases in the manifest and the issues on GitHub, each
// checked first.
func Run(ctx context.Context, o *Options) error {
	a, dir := o.App, o.Dir
	res, err := engine.Retry(ctx, dir, o.IDs, engine.RetryOptions{All: o.All, Issues: func(ctx context.Context) (*engine.IssueRetry, error) {
		return resolveIssueRetry(ctx, a, o.Flags)
	}})
	if err != nil {
		return err
	}
	for _, id := range res.Already {
		// Flipped by hand already, as the docs invite: what retry
		// would do is done.
		fmt.Fprintf(a.S.Out, "%s is already [pending]: the next run starts it (a kept branch is brought up to date first)\n", id)
	}
	for _, id := range res.Issues {
		fmt.Fprintf(a.S.Out, "retrying issue %s: queued again on GitHub (the queue takes it up at its next poll)\n", id)
	}
	manifestPath := filepath.Join(dir, roadmap.ManifestName)
	if len(res.Done) == 0 {
		if len(res.Already) == 0 && len(res.Issues) == 0 {
			fmt.Fprintln(a.S.Out, "nothing to retry: no phase is [blocked]")
		}
		return nil
	}
	rel, _ := filepath.Rel(a.Cwd, manifestPath)
	fmt.Fprintf(a.S.Out, "retrying %s (now [pending] in %s)\n", strings.Join(res.Done, ", "), rel)
	return nil
}

// resolveIssueRetry resolves the GitHub client and labels as the queue
// does (the one settings model).
func resolveIssueRetry(ctx context.Context, a *cmdutil.App, fs settings.Flags) (*engine.IssueRetry, error) {
	git, err := a.OpenRepo(ctx, a.Cwd)
	if err != nil {
		return nil, err
	}
	s, err := settings.Resolve(settings.Input{Scope: settings.Queue, Flags: fs, Env: a.Env, Top: git.Dir})
	if err != nil {
		return nil, err
	}
	g, err := wire.GitHub(ctx, s, git, a.Env, "retry of an issue")
	if err != nil {
		return nil, err
	}
	gh, err := issues.NewGitHub(g)
	if err != nil {
		return nil, &engine.SettingsError{Err: err}
	}
	return &engine.IssueRetry{GitHub: gh, Labels: issues.Labels(s.Labels)}, nil
}
