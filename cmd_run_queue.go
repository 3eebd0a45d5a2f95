package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/worktree"
)

// queueRun is the issue queue working beside a roadmap run, and what the
// scheduler needs of it: whether an issue a phase depends on is done.
type queueRun struct {
	gh       *issues.GitHub
	manifest string
	// snap is the latest answer from GitHub, replaced whole on each
	// refresh; the scheduler's loop only reads it.
	snap     atomic.Pointer[map[string]bool]
	finished chan struct{}
	sum      issues.Summary
	err      error
}

// startQueue builds the queue, checks the manifest's issue deps exist, and
// starts the queue and the refresher of issue states.
func startQueue(ctx context.Context, a *app, git *worktree.Client, qs *queueSetup, rm *roadmap.Roadmap, l scheduler.Layout, poll time.Duration) (*queueRun, error) {
	mp := rm.ManifestPath
	qs.cfg.Phases = func() ([]issues.Phase, error) { return issues.PhasesFromManifest(mp) }
	qs.cfg.PromptDirs = append(qs.cfg.PromptDirs, filepath.Join(rm.Dir, "prompts"), filepath.Join(l.Dir(), "prompts"))
	q, gh, err := qs.build(a, git)
	if err != nil {
		return nil, err
	}
	r := &queueRun{gh: gh, manifest: mp, finished: make(chan struct{})}
	empty := map[string]bool{}
	r.snap.Store(&empty)
	if err := r.refresh(ctx); err != nil {
		if errors.Is(err, issues.ErrNotFound) {
			return nil, &roadmap.InvalidError{Path: mp, Problems: []roadmap.Problem{{Msg: err.Error()}}}
		}
		return nil, err
	}
	go func() {
		defer close(r.finished)
		r.sum, r.err = q.Run(ctx)
		// What the queue merged last must be seen before the roadmap
		// stops waiting on it.
		if err := r.refresh(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintf(a.s.Err, "claudopilot: warning: reading issue states: %v\n", err)
		}
	}()
	go r.loop(ctx, poll, a)
	return r, nil
}

// refresh asks GitHub about every issue the manifest (as it is now, live
// edits included) depends on.
func (r *queueRun) refresh(ctx context.Context) error {
	rm, err := roadmap.Load(filepath.Dir(r.manifest), roadmap.Options{External: roadmap.IsIssueRef})
	if err != nil {
		return nil // a half-saved manifest: ask again next time
	}
	var ids []string
	for _, n := range rm.Nodes {
		ids = append(ids, n.External...)
	}
	if len(ids) == 0 {
		return nil
	}
	done, err := r.gh.IssuesDone(ctx, ids)
	if err != nil {
		return err
	}
	r.snap.Store(&done)
	return nil
}

func (r *queueRun) loop(ctx context.Context, poll time.Duration, a *app) {
	if poll <= 0 {
		poll = 5 * time.Second
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := r.refresh(ctx); err != nil && ctx.Err() == nil {
				fmt.Fprintf(a.s.Err, "claudopilot: warning: reading issue states: %v\n", err)
			}
		}
	}
}

// done reports whether issue id is done, as of the latest refresh.
func (r *queueRun) done(id string) bool { return (*r.snap.Load())[id] }

// working is true while the queue runs: waiting on an issue may still pay.
func (r *queueRun) working() bool {
	select {
	case <-r.finished:
		return false
	default:
		return true
	}
}

// wait waits for the queue to end.
func (r *queueRun) wait() (issues.Summary, error) {
	<-r.finished
	return r.sum, r.err
}
