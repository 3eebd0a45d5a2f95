package issues

import (
	"context"
	"fmt"
)

// refill tells Config.Refill how many issues wait for an agent or a
// maintainer: open, ready (as the last poll read them) or proposed by a
// scanner (SCANNER_LABEL), not claimed and not held by this driver. The
// proposals are one more conditional request per poll (free when nothing
// changed: docs/queue.md, "The poll's cost").
func (q *Queue) refill(ctx context.Context, st *pollState, held func(int) bool) {
	if q.cfg.Refill == nil || q.cfg.ScannerLabel == "" {
		return
	}
	proposed, err := q.gh.OpenIssues(ctx, q.cfg.ScannerLabel, q.cfg.NewestFirst, q.cfg.BatchSize)
	if err != nil {
		q.logf("refill: reading the proposals: %v", err)
		return
	}
	seen := map[int]bool{}
	for _, is := range append(append([]*Issue(nil), st.ready...), proposed...) {
		if seen[is.Number] || held(is.Number) || is.HasLabel(q.cfg.Labels.Claim) || is.HasLabel(q.cfg.Labels.Blocked) {
			continue
		}
		seen[is.Number] = true
	}
	q.cfg.Refill(ctx, len(seen))
}

// BaseTip brings the base to its tip on GitHub (liveBase) and returns
// it: the commit a scanner reads.
func (q *Queue) BaseTip(ctx context.Context) (string, error) { return q.liveBase(ctx) }

// AgentEnvironment is the environment agents get: the driver's without
// the token and secret-named variables.
func (q *Queue) AgentEnvironment() []string { return q.agentEnv }

// Tracker is the queue's GitHub as scanners file into it (package
// scanner's Tracker, through engine): every open issue, and a new one.
func (q *Queue) Tracker() *Tracker { return &Tracker{gh: q.gh} }

// Tracker opens and lists issues for the scanners.
type Tracker struct{ gh *GitHub }

// NewTracker is a Tracker of gh, for a command without a queue.
func NewTracker(gh *GitHub) *Tracker { return &Tracker{gh: gh} }

// OpenIssues lists up to 1000 open issues, oldest first.
func (t *Tracker) OpenIssues(ctx context.Context) ([]*Issue, error) {
	return t.gh.OpenIssues(ctx, "", false, 1000)
}

// FileIssue opens an issue (CreateIssue).
func (t *Tracker) FileIssue(ctx context.Context, title, body string, labels []string) (int, error) {
	return t.gh.CreateIssue(ctx, title, body, labels)
}

// ResolveBase takes the repository's default branch as the base when
// none is set, as Start does, for a command that does not Start.
func (q *Queue) ResolveBase(ctx context.Context) error {
	if q.cfg.Base != "" {
		return nil
	}
	b, err := q.gh.DefaultBranch(ctx)
	if err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	q.cfg.Base = b
	return nil
}
