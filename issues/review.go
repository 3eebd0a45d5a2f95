package issues

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/claudopilot/claudopilot/prompts"
	"github.com/claudopilot/claudopilot/review"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
)

// The queue's side of the review gate (docs/review.md, "In queue mode").
// The scheduler's loop reviews issues as it reviews phases, with the same
// reviewers, rounds and REVIEW_SLOTS pool: the landing hands a green pull
// request back (Land with ReviewFirst), the queue supplies what its
// reviewers read (reviewInputs: the pull request's head and body, the
// base's tip on the remote, the issue's body), and the next Land records
// the loop's verdict as the driver's own comment on the pull request, for
// exactly the tree the reviewers read, before it merges, hands the pull
// request to a human, sends a worker with the findings, or ends the issue.
// A verdict counts only when the driver's own identity posted it for
// exactly the live head, base, issue body and pull request body.

// DefaultReviewLabel marks an issue and its pull request under review.
const DefaultReviewLabel = "agent-review"

// reviewInputs are what a queue fingerprint is computed from.
type reviewInputs struct {
	head, base        string
	issueBody, prBody string
}

func (in reviewInputs) fingerprint() string {
	return review.Fingerprint(in.head, in.base, []byte(in.issueBody), in.prBody)
}

// liveInputs reads the fingerprint's inputs as they are now: the pull
// request's head and body, the base's tip on GitHub (fetched here when
// this clone lacks it), the issue body.
func (w *worker) liveInputs(ctx context.Context) (reviewInputs, error) {
	q := w.q
	var in reviewInputs
	p, err := q.gh.PR(ctx, w.pr.Number)
	if err != nil {
		return in, fmt.Errorf("read pull request #%d: %w", w.pr.Number, err)
	}
	is, err := q.gh.Issue(ctx, w.n)
	if err != nil {
		return in, fmt.Errorf("read issue %s: %w", w.id, err)
	}
	base, err := q.liveBase(ctx)
	if err != nil {
		return in, err
	}
	in.head, in.base, in.issueBody, in.prBody = p.HeadSHA, base, is.Body, p.Body
	return in, nil
}

// ownVerdicts are the review markers on the pull request that this
// driver's identity posted for this issue and pull request, oldest first.
// Comments by anyone else, however much they look like ours, never count.
func (w *worker) ownVerdicts(ctx context.Context) ([]review.Marker, error) {
	q := w.q
	self := q.gh.Self()
	if self == "" {
		if _, err := q.gh.Login(ctx); err != nil {
			return nil, err
		}
		if self = q.gh.Self(); self == "" {
			return nil, errors.New("the driver's own login is unknown, so no verdict can be told from a forgery")
		}
	}
	cs, err := q.gh.Comments(ctx, w.pr.Number)
	if err != nil {
		return nil, err
	}
	var out []review.Marker
	for _, c := range cs {
		if c.Author != self {
			continue
		}
		for _, m := range review.Parse([]byte(c.Body)) {
			if m.Phase == w.id && m.PR == w.pr.Number {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// accepted is the verdict this driver posted for exactly the live inputs.
func accepted(ms []review.Marker, in reviewInputs, id string, pr int) review.Verdict {
	var mine []review.Marker
	for _, m := range ms {
		if m.Fingerprint == in.fingerprint() {
			mine = append(mine, m)
		}
	}
	return review.Accept(mine, review.Want{Phase: id, Fingerprint: in.fingerprint(), Head: in.head, Base: in.base, PR: pr})
}

// IssueReviewer is the review gate's reviewer of the queue's issues: base,
// the phases' reviewer (REVIEW_CMD, its timeouts, log cap and sandbox), in
// the queue's clone, with an environment without the token and the
// queue's prompts, reading what it reviews from the pull request.
func (q *Queue) IssueReviewer(base *work.Reviewer) *work.Reviewer {
	r := *base
	r.Git, r.Env = q.git, q.agentEnv
	r.Prompts = prompts.Set{Dirs: q.cfg.PromptDirs}
	r.Redact = q.known() // the funnel, knowing the token
	r.Inputs = q.reviewInputs
	return &r
}

// Reviewer routes the review gate's jobs: an issue's to issues, a phase's
// to phases.
func (s *Source) Reviewer(phases, issues scheduler.Reviewer) scheduler.Reviewer {
	return reviewRouter{phases: phases, issues: issues}
}

type reviewRouter struct{ phases, issues scheduler.Reviewer }

func (r reviewRouter) Review(ctx context.Context, j scheduler.ReviewJob) scheduler.ReviewOutcome {
	if _, ok := ParseIssueID(j.ID); ok {
		return r.issues.Review(ctx, j)
	}
	return r.phases.Review(ctx, j)
}

// reviewInputs reads, live, what a reviewer of issue id reads: its pull
// request's head (fetched when this clone lacks it) and body, the base's
// tip on the remote and the issue's body.
func (q *Queue) reviewInputs(ctx context.Context, id string) (work.ReviewInputs, error) {
	n, ok := ParseIssueID(id)
	if !ok {
		return work.ReviewInputs{}, fmt.Errorf("not an issue id: %s", id)
	}
	q.landMu.Lock()
	var w *worker
	if l := q.lands[n]; l != nil && l.w.pr != nil {
		w = &worker{q: q, n: n, id: id, branch: l.w.branch, pr: l.w.pr}
	}
	q.landMu.Unlock()
	if w == nil {
		return work.ReviewInputs{}, fmt.Errorf("%s has no pull request to review", id)
	}
	in, err := w.liveInputs(ctx)
	if err != nil {
		return work.ReviewInputs{}, err
	}
	if _, err := q.git.RevParse(ctx, in.head+"^{commit}"); err != nil {
		if err := q.fetch(ctx, w.branch); err != nil {
			return work.ReviewInputs{}, err
		}
	}
	return work.ReviewInputs{Head: in.head, Base: in.base, BaseBranch: q.cfg.Base, Doc: []byte(in.issueBody), Line: in.prBody, PR: w.pr.Number}, nil
}

// reviewFailure ends the issue for the review gate: a review that could
// not be recorded or read back fails closed.
func reviewFailure(format string, args ...any) *failure {
	return &failure{reason: state.ReasonReview, detail: fmt.Sprintf(format, args...)}
}

// passed tells whether the driver's own PASS covers exactly the live tree
// (a restarted driver's, or the verdict just recorded). A head someone
// else pushed meanwhile is followed, and again says its checks come first.
func (w *worker) passed(ctx context.Context, st *landState) (pass, again bool, f *failure) {
	own, err := w.ownVerdicts(ctx)
	if err != nil {
		return false, false, reviewFailure("%v", err)
	}
	in, err := w.liveInputs(ctx)
	if err != nil {
		return false, false, reviewFailure("%v", err)
	}
	if in.head != st.head {
		w.q.logIssue(w.n, "the head moved to %s before the review; checking again", short(in.head))
		if err := w.follow(ctx, in.head); err != nil {
			return false, false, &failure{reason: state.ReasonWorktree, detail: err.Error()}
		}
		st.head, st.since = in.head, w.q.clock.Now()
		return false, true, nil
	}
	return accepted(own, in, w.id, w.pr.Number).Kind == review.PassKind, false, nil
}

// underReview labels the issue and its pull request while the loop's
// reviewers read it; a label that cannot be set fails closed.
func (w *worker) underReview(ctx context.Context, st *landState) *failure {
	if st.reviewLabel {
		return nil
	}
	for _, n := range []int{w.n, w.pr.Number} {
		if err := w.q.gh.AddLabels(ctx, n, DefaultReviewLabel); err != nil && !errors.Is(err, ErrNotFound) {
			return reviewFailure("%v", err)
		}
	}
	st.reviewLabel = true
	return nil
}

// reviewDone takes the review label off the issue and its pull request.
func (w *worker) reviewDone(ctx context.Context, st *landState) {
	if !st.reviewLabel || w.pr == nil {
		return
	}
	fin := context.WithoutCancel(ctx)
	for _, n := range []int{w.n, w.pr.Number} {
		_ = w.q.gh.RemoveLabel(fin, n, DefaultReviewLabel)
	}
	st.reviewLabel = false
}

// recordVerdict records the loop's verdict v on the pull request, as the
// driver's own comment, and reads it back. nil: it is a PASS for the live
// tree, or the pull request, its base or the issue changed under the
// reviewers (nothing is posted, the round is not spent): either way the
// landing goes on, and hands a moved tree back for review (a moved head's
// checks first). Otherwise the failure says why the issue does not land:
// BLOCKING with rounds left (head and checks set: a worker takes the
// findings beyond head), the last round's BLOCKING, or a verdict that
// could not be recorded (it fails closed).
func (w *worker) recordVerdict(ctx context.Context, v *scheduler.Verdict, st *landState) *failure {
	q := w.q
	defer w.reviewDone(ctx, st)
	live, err := w.liveInputs(ctx)
	if err != nil {
		return reviewFailure("%v", err)
	}
	if v.Fingerprint != "" && live.fingerprint() != v.Fingerprint {
		if st.reviewMoves++; st.reviewMoves > maxUpdates {
			return reviewFailure("the pull request or its base kept moving during the review")
		}
		q.logIssue(w.n, "the pull request or its base moved during the review; reviewing again")
		if live.head != st.head {
			if err := w.follow(ctx, live.head); err != nil {
				return &failure{reason: state.ReasonWorktree, detail: err.Error()}
			}
			st.head, st.since = live.head, q.clock.Now()
		}
		return nil
	}
	m := review.Marker{Fingerprint: live.fingerprint(), Phase: w.id, Head: live.head, Base: live.base, Verdict: review.Blocking, Findings: v.Findings, PR: w.pr.Number}
	if v.Pass {
		m.Verdict = review.Pass
	}
	if m.Findings == nil {
		m.Findings = []string{}
	}
	if _, err := q.gh.PostComment(ctx, w.pr.Number, verdictComment(v.Round, m)); err != nil {
		return reviewFailure("post the review verdict: %v", err)
	}
	// The verdict counts as read back from GitHub: our own comment, for
	// this issue, pull request and tree.
	own, err := w.ownVerdicts(ctx)
	if err != nil {
		return reviewFailure("%v", err)
	}
	got := accepted(own, live, w.id, w.pr.Number)
	findings := got.Findings
	if got.Why != "" {
		// e.g. a PASS now where this tree was found BLOCKING before:
		// two verdicts for one fingerprint block.
		findings = append(findings, "claudopilot: "+got.Why)
	}
	switch {
	case got.Kind == review.PassKind:
		q.logIssue(w.n, "review PASS in round %d recorded on pull request #%d", v.Round, w.pr.Number)
		return nil
	case got.Kind == review.None:
		return reviewFailure("the posted verdict could not be read back as the driver's own: %s", got.Why)
	case v.Last:
		return reviewFailure("still BLOCKING after %d round(s): %s", v.Round, strings.Join(findings, "; "))
	}
	q.logIssue(w.n, "review BLOCKING in round %d recorded on pull request #%d", v.Round, w.pr.Number)
	f := reviewFailure("BLOCKING in round %d: %s", v.Round, strings.Join(findings, "; "))
	f.head, f.checks = live.head, findings
	return f
}

// verdictComment is the pull request comment that records a verdict.
func verdictComment(round int, m review.Marker) string {
	var b strings.Builder
	fmt.Fprintf(&b, "claudopilot review, round %d: **%s** for %s at %s (base %s).\n", round, m.Verdict, m.Phase, short(m.Head), short(m.Base))
	for _, f := range m.Findings {
		b.WriteString("- " + strings.ReplaceAll(f, "\n", " ") + "\n")
	}
	b.WriteString("\n" + m.Line() + "\n")
	return b.String()
}
