package issues

import (
	"context"
	"errors"
	"fmt"

	"github.com/claudopilot/claudopilot/issues/queuelog"
	"github.com/claudopilot/claudopilot/prompts"
	"github.com/claudopilot/claudopilot/runview"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/work"
)

// startWaiting runs Start; a GitHub that keeps failing is waited for,
// unless Once.
func (q *Queue) startWaiting(ctx context.Context) error {
	for {
		err := q.Start(ctx)
		if err == nil {
			return nil
		}
		if q.cfg.Once || !errors.Is(err, ErrUnavailable) || ctx.Err() != nil {
			return err
		}
		q.logf("start: %v; trying again in %s", err, q.cfg.Poll)
		if err := (RealClock{}).Sleep(ctx, q.cfg.Poll); err != nil {
			return fmt.Errorf("queue: %w", context.Cause(ctx))
		}
	}
}

// IssueRunner is the runner of the queue's issues: base, the one worker
// runner (package work) with the run's settings, in the queue's clone,
// with an environment without the token and the queue's prompts.
func (q *Queue) IssueRunner(base *work.Runner) *work.Runner {
	r := *base
	r.Git = q.git
	r.Env = q.agentEnv
	r.Redact = q.known() // the funnel, knowing the token
	r.Prompts = prompts.Set{Dirs: q.cfg.PromptDirs}
	return &r
}

// Labels are the queue's label names, defaults filled in.
func (q *Queue) Labels() Labels { return q.cfg.Labels }

// Render writes the scheduler's events about issues as the queue's log
// lines, until ch is closed. The lines render runview's fold (the one the
// terminal and the page render): what an event did to its node.
func (q *Queue) Render(ch <-chan scheduler.Event) {
	f := runview.New()
	for e := range ch {
		for _, l := range queuelog.Lines(f, e) {
			q.logf("%s", l)
		}
	}
}
