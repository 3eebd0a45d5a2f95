// Package snapshot is what status, explain, logs and report read of a
// roadmap (status.Snapshot) as the command line shows it. It is its own
// package, not part of cmdutil, so that the commands that never read a
// snapshot do not link the worktree client; it links neither the engine
// nor the queue (issue 23: the suite's link cost; internal/funclen's
// TestLightPackagesStayLight).
package snapshot

import (
	"context"
	"fmt"
	"time"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/status"
)

// Snapshot is what status, explain and logs read (status.Snapshot), with
// where the user stands: paths are shown relative to it.
type Snapshot struct {
	*status.Snapshot
	Cwd string
}

// Load reads the snapshot of the roadmap arg names (cmdutil.FindRoadmapDir).
func Load(ctx context.Context, a *cmdutil.App, arg string) (*Snapshot, error) {
	dir, err := cmdutil.FindRoadmapDir(ctx, a, arg)
	if err != nil {
		return nil, err
	}
	// MidRename: a run may be landing a phase this very moment.
	rm, err := roadmap.Load(dir, roadmap.Options{External: roadmap.IsIssueRef, MidRename: true})
	if err != nil {
		return nil, err
	}
	git, err := a.OpenRepo(ctx, dir)
	if err != nil {
		return nil, err
	}
	layout := state.Layout{Top: git.Dir}
	if rel, err := state.MakeLayout(git.Dir, dir, ""); err == nil {
		layout = rel
	}
	lockPath := ""
	if common, err := git.CommonDir(ctx); err == nil {
		lockPath = state.LockPath(common)
	}
	s, err := status.Read(rm, layout, lockPath, time.Now())
	if err != nil {
		return nil, err
	}
	return &Snapshot{Snapshot: s, Cwd: a.Cwd}, nil
}

// Rel shows a path relative to the repository's top level.
func (s *Snapshot) Rel(p string) string {
	if p == "" {
		return ""
	}
	return cmdutil.RelTo(s.Cwd, p)
}

// RunRules are the rules status and explain decide eligibility by: the
// newest run's journal record, which holds its flags too; before any run,
// the rules of the settings a run would resolve (settings.Rules: the
// scheduler's own defaults, not a copy of them).
func RunRules(a *cmdutil.App, s *Snapshot) state.Rules {
	if r := s.Rules; r != nil && len(r.Lanes) > 0 {
		return *r
	}
	set, _ := settings.Resolve(settings.Input{Scope: settings.Run, Env: a.Env, Top: s.Layout.Top, Manifest: s.Roadmap.Manifest})
	return set.Rules() // a bad value is doctor's and run's to report; the rest still holds
}

// IssueLabels are the queue's labels as a queue here would resolve them.
func IssueLabels(a *cmdutil.App, top string) settings.Labels {
	set, _ := settings.Resolve(settings.Input{Scope: settings.Queue, Env: a.Env, Top: top})
	return set.Labels
}

// RetryIssueText says how to retry an issue: on GitHub, by its labels;
// no manifest line holds its state.
func RetryIssueText(a *cmdutil.App, top, id string) string {
	l := IssueLabels(a, top)
	return fmt.Sprintf("retry it on GitHub: remove the label %q from issue %s and add %q (the next run with --issues, or queue, takes it up again on its kept branch)", l.Blocked, id, l.Ready)
}
