package issues

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/claudopilot/claudopilot/prompts"
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
// lines, until ch is closed.
func (q *Queue) Render(ch <-chan scheduler.Event) {
	for e := range ch {
		switch e.Kind {
		case scheduler.EvLaunch:
			q.logf("%s: %s %d started", e.Phase, e.Role, e.Attempt)
		case scheduler.EvExit:
			switch {
			case e.Reason == "":
			case e.Role == "":
				q.logf("%s: landing: %s: %s", e.Phase, e.Reason, e.Detail)
			default:
				q.logf("%s: %s %d: %s: %s", e.Phase, e.Role, e.Attempt, e.Reason, e.Detail)
			}
		case scheduler.EvMerged:
			q.logf("%s: merged at %s", e.Phase, short(e.Detail))
		case scheduler.EvReview:
			q.logf("%s: reviewer %d started (%s)", e.Phase, e.Attempt, e.Detail)
		case scheduler.EvVerdict:
			q.logf("%s: review %s", e.Phase, e.Detail)
		case scheduler.EvCooldown:
			q.logf("%s: %s", e.Phase, e.Detail)
		case scheduler.EvWarn:
			q.logf("warning: %s%s", prefix(e.Phase), e.Detail)
		case scheduler.EvPaused:
			q.logf("paused: no new launches until resumed")
		case scheduler.EvResumed:
			q.logf("resumed")
		case scheduler.EvDrain:
			q.logf("draining: what runs finishes, nothing new starts")
		case scheduler.EvEnd:
			if strings.HasPrefix(e.Detail, "drained") {
				q.logf("%s", e.Detail)
			}
		}
	}
}

func prefix(id string) string {
	if id == "" {
		return ""
	}
	return id + ": "
}
