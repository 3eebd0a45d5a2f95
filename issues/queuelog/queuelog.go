// Package queuelog is the queue's log lines: what a scheduler event did to
// its node, rendered from runview's fold (the one the terminal's table and
// the web page render). Package issues writes them (Queue.Render); its own
// light package so that TestViewsAgree (internal/cli/progress), which
// checks the three views say the same, does not link the GitHub client
// with package issues (27 MB of its test binary's 173 to link, #23).
package queuelog

import (
	"fmt"
	"strings"

	"github.com/claudopilot/claudopilot/runview"
	"github.com/claudopilot/claudopilot/scheduler"
)

// Lines folds e into f and returns the queue log's lines for it.
func Lines(f *runview.Fold, e scheduler.Event) []string {
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
		return fmt.Sprintf("%s: merged at %.10s", n.ID, e.Detail)
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
