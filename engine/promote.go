package engine

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/claudopilot/claudopilot/internal/syncw"
	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/notify"
	"github.com/claudopilot/claudopilot/promote"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// PromoteSettings are the promote loop's (docs/queue.md, "Promote loop").
type PromoteSettings struct {
	To    []string      // PROMOTE_TO ("": no promote loop)
	Every time.Duration // PROMOTE_EVERY_HOURS
}

// newPromoter composes the promote loop of the queue's repository:
// GitHub's checks and pull requests, the clone's fetches, the promote
// ledger, and announce through send (nil: none).
func newPromoter(q *issues.Queue, gh *issues.GitHub, git *worktree.Client, l state.Layout, qs *QueueSetup, log io.Writer, send func(scheduler.Event)) *promote.Promoter {
	c := qs.Cfg
	logw := syncw.New(log)
	return &promote.Promoter{
		GitHub: gh, Git: git, Remote: c.Remote, Base: q.Base, To: qs.Promote.To, Every: cmp.Or(qs.Promote.Every, 24*time.Hour),
		Grace: cmp.Or(c.ChecksGrace, 120*time.Second), Timeout: cmp.Or(c.ChecksTimeout, 2*time.Hour), Poll: cmp.Or(c.CheckPoll, c.Poll, time.Minute),
		Ledger: filepath.Join(l.StateDir(), promote.LedgerName), Clock: cmp.Or[issues.Clock](c.Clock, issues.RealClock{}),
		Log: func(format string, args ...any) {
			fmt.Fprintf(logw, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
		},
		Announce: func(r promote.Result) {
			if send != nil {
				send(promoteEvent(r))
			}
		},
	}
}

// promoteEvent is a step's end as the notifier takes it.
func promoteEvent(r promote.Result) scheduler.Event {
	ev := scheduler.Event{Time: r.At, Kind: notify.EvPromoteRed, Phase: r.From + "→" + r.To, Detail: r.Why}
	if r.Kind == promote.Promoted {
		ev.Kind, ev.Detail = notify.EvAnnounce, fmt.Sprintf("pull request #%d merged\n\n%s", r.PR, r.Changelog)
	}
	return ev
}

// promoteLoop runs a round every poll while the queue polls.
func (r *queueRun) promoteLoop(ctx context.Context, p *promote.Promoter, poll time.Duration) {
	t := time.NewTicker(cmp.Or(poll, time.Minute))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := p.Round(ctx, false, ""); err != nil && ctx.Err() == nil {
				fmt.Fprintf(r.log, "claudopilot: warning: promote: %v\n", err)
			}
		}
	}
}

// OpenPromoter composes the promote loop outside a run, for `claudopilot
// promote`: the queue's GitHub (base: BASE_BRANCH, else the repository's
// default branch), refused when the repository allows no merge commits;
// announce goes to NOTIFY_CMD (notify; "" none).
func OpenPromoter(ctx context.Context, git *worktree.Client, base string, qs *QueueSetup, env []string, notifyCmd string, log io.Writer) (*promote.Promoter, func(), error) {
	e := &Engine{Git: git, Layout: state.Layout{Top: git.Dir}}
	e.funnel(env, qs)
	e.log = logWriter{e: e, w: log}
	qs.Cfg.Base = base
	q, gh, err := qs.build(e.log, git)
	if err != nil {
		return nil, nil, err
	}
	if err := q.ResolveBase(ctx); err != nil {
		return nil, nil, err
	}
	if err := promote.CheckRepo(ctx, gh); err != nil {
		return nil, nil, &SettingsError{Err: err}
	}
	var send func(scheduler.Event)
	done := func() {}
	if notifyCmd != "" {
		n := &notify.Notifier{Cmd: notifyCmd, Env: env, Log: e.log}
		n.Start(ctx)
		send, done = n.Send, n.Close
	}
	return newPromoter(q, gh, git, e.Layout, qs, e.log, send), done, nil
}
