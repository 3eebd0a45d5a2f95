package issues

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
		for _, l := range LogLines(f, e) {
			q.logf("%s", l)
		}
	}
}

// LogLines folds e into f and returns the queue log's lines for it.
func LogLines(f *runview.Fold, e scheduler.Event) []string {
	n := f.Apply(e)
	if n != nil {
		if l := nodeLine(n, e); l != "" {
			return []string{l}
		}
	}
	if l := runLine(e); l != "" {
		return []string{l}
	}
	return nil
}

// nodeLine is the line for an event that moved node n ("" none).
func nodeLine(n *runview.Node, e scheduler.Event) string {
	switch e.Kind {
	case scheduler.EvLaunch:
		return fmt.Sprintf("%s: %s %d started", n.ID, n.Role, n.Attempt)
	case scheduler.EvExit:
		switch {
		case e.Reason == "":
		case e.Role == "":
			return fmt.Sprintf("%s: landing: %s: %s", n.ID, e.Reason, e.Detail)
		default:
			return fmt.Sprintf("%s: %s %d: %s: %s", n.ID, e.Role, e.Attempt, e.Reason, e.Detail)
		}
	case scheduler.EvMerged:
		return fmt.Sprintf("%s: merged at %s", n.ID, short(e.Detail))
	case scheduler.EvReview:
		return fmt.Sprintf("%s: reviewer %d started (%s)", n.ID, e.Attempt, e.Detail)
	case scheduler.EvVerdict:
		return fmt.Sprintf("%s: review %s", n.ID, e.Detail)
	case scheduler.EvCooldown:
		return fmt.Sprintf("%s: %s", n.ID, e.Detail)
	case scheduler.EvAsk:
		return fmt.Sprintf("%s: %s: %s", n.ID, n.Shown(), n.Question)
	case scheduler.EvAnswer:
		return fmt.Sprintf("%s: %s: answered", n.ID, n.Shown())
	case scheduler.EvBlocked, scheduler.EvFailed:
		if n.Reason == "" && n.Detail == "" {
			return ""
		}
		return fmt.Sprintf("%s: %s: %s", n.ID, n.Shown(), parked(n))
	case scheduler.EvAway:
		return fmt.Sprintf("%s: %s: %s", n.ID, n.Shown(), n.Detail)
	}
	return ""
}

// parked says why a node is parked: its reason, and the detail.
func parked(n *runview.Node) string {
	switch {
	case n.Reason == "":
		return n.Detail
	case n.Detail == "":
		return string(n.Reason)
	}
	return string(n.Reason) + ": " + n.Detail
}

// runLine is the line for an event about the run ("" none).
func runLine(e scheduler.Event) string {
	switch e.Kind {
	case scheduler.EvWarn:
		return fmt.Sprintf("warning: %s%s", prefix(e.Phase), e.Detail)
	case scheduler.EvPaused:
		return "paused: no new launches until resumed"
	case scheduler.EvResumed:
		return "resumed"
	case scheduler.EvDrain:
		return "draining: what runs finishes, nothing new starts"
	case scheduler.EvEnd:
		if strings.HasPrefix(e.Detail, "drained") {
			return e.Detail
		}
	}
	return ""
}

func prefix(id string) string {
	if id == "" {
		return ""
	}
	return id + ": "
}
