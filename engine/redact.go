package engine

import (
	"io"

	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/secret"
)

// The redaction funnel (#22 §2): one secret.Redactor, built once from the
// driver's environment and the queue's token, and handed to every writer
// of the run: the attempt, gate and bootstrap logs, the failure logs
// handed to supervisors, the journal, the event stream (--json, the web
// page's SSE and API, notifications), the notes and warnings, and the
// queue's GitHub client (comments, pull request titles and bodies).

// funnel builds the run's redactor from env and the queue's token, and
// gives it to the queue's GitHub client.
func (e *Engine) funnel(env []string, qs *QueueSetup) {
	var tokens []string
	if qs != nil {
		tokens = append(tokens, qs.GitHub.Token, qs.Cfg.Token)
	}
	e.redact = secret.NewRedactor(env, tokens...)
	if qs != nil {
		qs.GitHub.Scrubber = issues.ScrubberFor(e.redact)
	}
}

// logWriter redacts the driver's notes and warnings (one line a write)
// with the run's funnel as it is when written: the rules alone until
// funnel has run.
type logWriter struct {
	e *Engine
	w io.Writer
}

func (l logWriter) Write(p []byte) (int, error) { return l.e.redact.Writer(l.w).Write(p) }

// redactEvent is ev with its texts through the funnel.
func redactEvent(r *secret.Redactor, ev scheduler.Event) scheduler.Event {
	ev.Detail, ev.Title = r.String(ev.Detail), r.String(ev.Title)
	return ev
}
