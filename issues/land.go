package issues

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v84/github"

	"github.com/claudopilot/claudopilot/state"
)

// Landing an issue's branch on GitHub, to the roadmap's standard: what is
// merged is what CI tested against the current base, as a phase's merge
// is what the gate saw.
//
//  1. Push, open a draft pull request, and mark it ready before counting
//     its checks: CI that skips drafts reports none on a draft, and "no
//     checks" would read as green.
//  2. Wait for the head's checks. "No checks" is green only CHECKS_GRACE
//     after the head was pushed and marked ready (checks appear seconds
//     after a push); checks pending (or unreadable) CHECKS_TIMEOUT after
//     it block the issue. Red checks go to the repair supervisor.
//  3. Green: if the head lacks commits of the base (the base moved since
//     CI ran), GitHub's update-branch merges the base in (with the head's
//     sha expected), the branch follows, and its checks are waited for
//     again. Only a head that contains the base's tip is merged, with that
//     head's sha, so the merge result is the tree CI saw.
//
// A base that moves between the compare and the merge (a few hundred
// milliseconds) is the one window left: GitHub's merge API cannot be made
// conditional on the base.

// maxUpdates is how often a green pull request is brought up to date with
// a base that keeps moving before the issue is blocked.
const maxUpdates = 10

// landState is what one issue's landing keeps between its steps (a
// repair of red checks comes in between): the head its checks are read
// for, when that head was pushed and the pull request ready, and how often
// the base or the head moved under it.
type landState struct {
	head    string    // the head last pushed or followed; "" before the first push
	since   time.Time // when head was pushed and the pull request marked ready
	updates int       // the branch brought up to date with a moving base
	moved   int       // the head moved by someone else
	// approval: when the merge was first refused for want of an
	// approving review (zero: never); approvers: the approvals seen since.
	approval  time.Time
	approvers int
	requeued  int // the merge queue removed it for a conflict, and it was queued again
	// reviewLabel: the review label is on the issue and the pull request
	// (handed back for review); reviewMoves counts trees that moved under
	// the reviewers.
	reviewLabel bool
	reviewMoves int
}

// toReview is landStep's kind for a green head handed back to the loop's
// reviewers.
const toReview = "to-review"

// landStep lands the local branch's tip: it pushes it (when it is new),
// opens and readies the pull request (once), waits for the head's checks
// and merges a green head that contains the base (or hands it for
// review). Red checks end the step with a failure whose red is set and
// whose head is the red commit: a repair goes beyond it and the next step
// carries on from st. kind is Merged, Review, Dropped or, with reviewFirst
// (the loop's review gate is on), toReview: a green head the driver's own
// PASS does not cover yet, labelled and handed back.
func (w *worker) landStep(ctx context.Context, reviewFirst bool, st *landState) (string, *failure) {
	q := w.q
	if f := w.publish(ctx, st); f != nil {
		return "", f
	}
	for {
		sha := st.head
		verdict, checks, stp := w.waitChecks(ctx, sha, st.since)
		if kind, f := w.notGreen(ctx, sha, verdict, checks, stp); kind != "" || f != nil {
			return kind, f
		}
		// Green.
		if !q.cfg.AutoMerge {
			if kind, again, f := w.reviewGate(ctx, reviewFirst, st); f != nil || kind != "" {
				return kind, f
			} else if again {
				continue
			}
			return Review, nil
		}
		if again, f := w.updateBehind(ctx, sha, st); f != nil {
			return "", f
		} else if again {
			continue
		}
		if kind, again, f := w.reviewGate(ctx, reviewFirst, st); f != nil || kind != "" {
			return kind, f
		} else if again {
			continue
		}
		if kind, f := w.mergeGreen(ctx, sha, st); kind != "" || f != nil {
			return kind, f
		}
	}
}

// publish pushes the branch's tip when it is new and opens and readies
// the pull request once; a new tip becomes st.head.
func (w *worker) publish(ctx context.Context, st *landState) *failure {
	q := w.q
	sha, err := q.git.RevParse(ctx, "refs/heads/"+w.branch)
	if err != nil {
		return &failure{reason: state.ReasonWorktree, detail: err.Error()}
	}
	if sha != st.head {
		if f := w.push(ctx); f != nil {
			return f
		}
		w.pushed = true
	}
	if w.pr == nil {
		pr, err := q.gh.CreatePR(ctx, w.branch, q.cfg.Base, w.is.Title,
			fmt.Sprintf("Closes %s\n\nWorked by claudopilot (instance %s) on branch `%s`.", w.id, q.instance, w.branch), true)
		if err != nil {
			return &failure{reason: state.ReasonPR, detail: err.Error()}
		}
		w.pr = pr
		w.stopHB() // an open pull request keeps the claim alive
		q.logIssue(w.n, "pushed %s, pull request #%d", w.branch, pr.Number)
		if err := q.gh.MarkReady(ctx, w.pr); err != nil {
			return &failure{reason: state.ReasonPR, detail: err.Error()}
		}
	}
	if sha != st.head {
		st.head, st.since = sha, q.clock.Now()
	}
	return nil
}

// headMoved follows a head someone else moved; its checks are read next.
func (w *worker) headMoved(ctx context.Context, st *landState, err error) *failure {
	q := w.q
	st.moved++
	if st.moved > 5 {
		return &failure{reason: state.ReasonMerge, detail: "the head kept moving: " + err.Error()}
	}
	p, perr := q.gh.PR(ctx, w.pr.Number)
	if perr != nil {
		return &failure{reason: state.ReasonMerge, detail: perr.Error()}
	}
	q.logIssue(w.n, "the head moved to %s; checking again", short(p.HeadSHA))
	if err := w.follow(ctx, p.HeadSHA); err != nil {
		return &failure{reason: state.ReasonWorktree, detail: err.Error()}
	}
	st.head, st.since = p.HeadSHA, q.clock.Now()
	return nil
}

// notGreen ends the landing for what waiting on sha's checks found other
// than green: an interrupt, the pull request merged or gone from the
// queue, checks still pending at CHECKS_TIMEOUT, or red. Nothing for green.
func (w *worker) notGreen(ctx context.Context, sha, verdict string, checks []Check, stp *stop) (string, *failure) {
	switch {
	case ctx.Err() != nil:
		return "", &failure{interrupted: true}
	case stp != nil && stp.kind == Merged:
		return Merged, nil
	case stp != nil && stp.kind == Dropped:
		return Dropped, &failure{away: stp.why}
	case stp != nil:
		return "", &failure{reason: state.ReasonPR, detail: stp.why}
	case verdict == "timeout":
		timeout := w.q.cfg.ChecksTimeout
		detail := fmt.Sprintf("checks of %s still pending after CHECKS_TIMEOUT (%s)", short(sha), timeout)
		if checks == nil {
			detail = fmt.Sprintf("checks of %s could not be read for CHECKS_TIMEOUT (%s)", short(sha), timeout)
		} else if p := pendingNames(checks); len(p) > 0 {
			detail += ": " + strings.Join(p, ", ")
		}
		return "", &failure{reason: state.ReasonChecks, detail: detail, checks: pendingNames(checks), head: sha}
	case verdict == "red":
		_, failing := Verdict(checks)
		return "", &failure{reason: state.ReasonChecks, detail: "failing checks: " + strings.Join(failing, ", "), checks: failing, log: w.checksLog(checks), head: sha, red: true}
	}
	return "", nil
}

// updateBehind brings a green head that lacks commits of the base up to
// date (again: its checks are read again): merge only what CI tested
// against the current base. A compare that cannot be read stops the
// landing (it fails closed).
func (w *worker) updateBehind(ctx context.Context, sha string, st *landState) (again bool, f *failure) {
	q := w.q
	behind, err := q.gh.BehindBase(ctx, q.cfg.Base, sha)
	if err != nil {
		return false, &failure{reason: state.ReasonMerge, detail: err.Error()}
	}
	if behind == 0 {
		return false, nil
	}
	if st.updates++; st.updates > maxUpdates {
		return false, &failure{reason: state.ReasonMerge, detail: fmt.Sprintf("%s kept moving: the branch was brought up to date %d times", q.cfg.Base, maxUpdates)}
	}
	head, err := q.gh.UpdateBranch(ctx, w.pr.Number, sha)
	switch {
	case errors.Is(err, ErrHeadMoved):
		return true, w.headMoved(ctx, st, err)
	case errors.Is(err, ErrConflict):
		return false, &failure{reason: state.ReasonConflict, detail: fmt.Sprintf("%s moved since the checks ran and no longer merges cleanly into %s: %v", q.cfg.Base, w.branch, err), head: sha}
	case err != nil:
		return false, &failure{reason: state.ReasonMerge, detail: err.Error()}
	}
	q.logIssue(w.n, "%s moved since the checks of %s ran (%d commits behind); updated the branch to %s, checking again", q.cfg.Base, short(sha), behind, short(head))
	if err := w.follow(ctx, head); err != nil {
		return false, &failure{reason: state.ReasonWorktree, detail: err.Error()}
	}
	st.head, st.since = head, q.clock.Now()
	return true, nil
}

// mergeGreen merges the green, current head sha: Merged, a failure, or
// nothing when its checks are to be read again (the head moved, the merge
// queue removed it, or an approval came).
func (w *worker) mergeGreen(ctx context.Context, sha string, st *landState) (string, *failure) {
	q := w.q
	err := w.merge(ctx, sha)
	switch {
	case err == nil:
		q.logIssue(w.n, "merged pull request #%d at %s", w.pr.Number, short(sha))
		return Merged, nil
	case errors.Is(err, ErrHeadMoved):
		return "", w.headMoved(ctx, st, err)
	case errors.Is(err, ErrMergeQueue):
		// Removed for a base that moved or conflicts: check again.
		return w.throughQueue(ctx, sha, st)
	case errors.Is(err, ErrApprovalRequired):
		// An approval came: check the base again, then merge.
		return w.awaitApproval(ctx, st)
	default:
		return "", mergeFailure(err)
	}
}

// merge merges the pull request's head sha with the merge method in use.
// With MERGE_METHOD=auto a method the repository refuses (405 "… are not
// allowed on this repository") teaches the next it allows, read again
// (or, when GitHub does not say, the next in the order merge, squash,
// rebase), and the merge is tried again with it.
func (w *worker) merge(ctx context.Context, sha string) error {
	q := w.q
	title := fmt.Sprintf("%s (#%d)", w.is.Title, w.pr.Number)
	tried := map[string]bool{}
	for {
		m := q.mergeMethod()
		tried[m] = true
		err := q.gh.Merge(ctx, w.pr.Number, sha, m, title)
		if !errors.Is(err, ErrMethodRefused) || q.cfg.MergeMethod != "auto" {
			return err
		}
		next := ""
		allowed, known, rerr := q.gh.MergeMethods(ctx)
		for _, c := range methods {
			if !tried[c] && (!known || rerr != nil || allowed[c]) {
				next = c
				break
			}
		}
		if next == "" {
			return err
		}
		q.logIssue(w.n, "the repository refuses %s merges; MERGE_METHOD=auto merges with %s from now on", m, next)
		q.setMergeMethod(next)
	}
}

// mergeFailure is the failure of a merge GitHub refused, with advice that
// does not send the issue round the same refusal again.
func mergeFailure(err error) *failure {
	f := &failure{reason: state.ReasonMerge, detail: err.Error()}
	switch {
	case errors.Is(err, ErrMethodRefused):
		f.detail = methodRefused + ": " + githubMessage(err)
	case errors.Is(err, ErrMergeQueue):
		f.detail = mergeQueueOnly + ": " + githubMessage(err)
	case errors.Is(err, ErrNotMergeable):
		f.detail = "GitHub refused the merge: " + githubMessage(err)
	}
	return f
}

// throughQueue merges a base that takes changes only through GitHub's
// merge queue: enqueuePullRequest with the head's oid expected, then the
// queue followed every CheckPoll until the pull request is merged or
// removed. Removed for failing checks, it goes to the supervisor like red
// checks (the merge group's checks are the base with this head); removed
// for anything else, it blocks with the queue's reason. Still queued
// CHECKS_TIMEOUT after it was enqueued: blocked as checks pending.
func (w *worker) throughQueue(ctx context.Context, sha string, st *landState) (string, *failure) {
	q := w.q
	before, _ := q.gh.MergeQueue(ctx, w.pr.Number)
	if err := q.gh.Enqueue(ctx, w.pr, sha); err != nil {
		return "", &failure{reason: state.ReasonMerge, detail: mergeQueueOnly + ", and adding it failed: " + githubMessage(err)}
	}
	q.logIssue(w.n, "pull request #%d added to the merge queue at %s", w.pr.Number, short(sha))
	since := q.clock.Now()
	for {
		if why := q.awayWhy(w.n); why != "" {
			return Dropped, &failure{away: why}
		}
		now, err := q.gh.MergeQueue(ctx, w.pr.Number)
		switch {
		case ctx.Err() != nil:
			return "", &failure{interrupted: true}
		case err != nil:
		case now.Merged:
			q.logIssue(w.n, "the merge queue merged pull request #%d", w.pr.Number)
			return Merged, nil
		case now.Queued == "" && now.Removals > before.Removals:
			if strings.Contains(strings.ToLower(now.Removed), "conflict") && st.requeued < maxUpdates {
				st.requeued++
				q.logIssue(w.n, "the merge queue removed pull request #%d: %s; bringing it up to date", w.pr.Number, now.Removed)
				return "", nil // the landing brings the branch up to date (or sends the conflict to the supervisor), then queues it again
			}
			if strings.Contains(strings.ToLower(now.Removed), "check") {
				return "", &failure{reason: state.ReasonChecks, detail: "the merge queue removed pull request #" + fmt.Sprint(w.pr.Number) + ": " + now.Removed + " (its merge group with " + q.cfg.Base + ")", head: sha, red: true, checks: []string{"merge queue: " + now.Removed}}
			}
			return "", &failure{reason: state.ReasonMerge, detail: "the merge queue removed pull request #" + fmt.Sprint(w.pr.Number) + ": " + now.Removed}
		}
		if q.clock.Now().Sub(since) >= q.cfg.ChecksTimeout {
			return "", &failure{reason: state.ReasonChecks, detail: fmt.Sprintf("pull request #%d still in the merge queue after CHECKS_TIMEOUT (%s)", w.pr.Number, q.cfg.ChecksTimeout), head: sha}
		}
		if err := q.clock.Sleep(ctx, q.cfg.CheckPoll); err != nil {
			return "", &failure{interrupted: true}
		}
	}
}

// The merge refusals' details, which the block comment's advice reads.
const (
	methodRefused  = "the repository does not allow this merge method (MERGE_METHOD)"
	mergeQueueOnly = "the base branch takes changes only through GitHub's merge queue"
)

// awaitApproval waits, without an agent, for the approving review branch
// protection wants: APPROVAL_LABEL on the issue and the pull request and
// one comment saying so (at the first refusal), then the pull request's
// reviews read every CheckPoll. A new approval returns ("", nil): the
// caller merges again. None within CLAIM_STALE_HOURS of the first
// refusal hands the pull request to a human (Review, with a note). The
// pull request merged or closed by someone, or the issue gone, end it as
// while checks are read.
func (w *worker) awaitApproval(ctx context.Context, st *landState) (string, *failure) {
	q := w.q
	if st.approval.IsZero() {
		st.approval = q.clock.Now()
		for _, n := range []int{w.n, w.pr.Number} {
			if err := q.gh.AddLabels(ctx, n, q.cfg.Labels.Approval); err != nil && !errors.Is(err, ErrNotFound) {
				return "", &failure{reason: state.ReasonMerge, detail: err.Error()}
			}
		}
		w.approvalAsked = true
		msg := fmt.Sprintf("Pull request #%d is green, but the base branch requires an approving review before it can be merged. It waits for one (label `%s`): approve it and claudopilot merges it, without another agent run. Without an approval by %s (CLAIM_STALE_HOURS), it is left for you to merge.",
			w.pr.Number, q.cfg.Labels.Approval, st.approval.Add(q.cfg.ClaimStale).UTC().Format(time.RFC3339))
		if _, err := q.gh.PostComment(ctx, w.n, msg); err != nil && !errors.Is(err, ErrNotFound) {
			return "", &failure{reason: state.ReasonMerge, detail: err.Error()}
		}
		q.logIssue(w.n, "pull request #%d waits for an approving review", w.pr.Number)
	}
	for {
		if why := q.awayWhy(w.n); why != "" {
			return Dropped, &failure{away: why}
		}
		if p, err := q.gh.PR(ctx, w.pr.Number); err == nil {
			switch {
			case p.Merged:
				return Merged, nil
			case p.State != "open":
				return "", &failure{reason: state.ReasonPR, detail: fmt.Sprintf("pull request #%d was closed without merging", p.Number)}
			}
		}
		if who, err := q.gh.Approvals(ctx, w.pr.Number); err == nil && len(who) > st.approvers {
			st.approvers = len(who)
			q.logIssue(w.n, "pull request #%d approved by %s; merging", w.pr.Number, strings.Join(who, ", "))
			return "", nil
		}
		if q.clock.Now().Sub(st.approval) >= q.cfg.ClaimStale {
			w.handNote = fmt.Sprintf("No approving review came within CLAIM_STALE_HOURS (%s): pull request #%d is green and left for you to approve and merge.", q.cfg.ClaimStale, w.pr.Number)
			return Review, nil
		}
		if err := q.clock.Sleep(ctx, q.cfg.CheckPoll); err != nil {
			return "", &failure{interrupted: true}
		}
	}
}

// githubMessage is GitHub's own message in err, without the request line
// and its API URL (which a comment must not show).
func githubMessage(err error) string {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Message != "" {
		return er.Message
	}
	return err.Error()
}

// reviewGate stands before a green head lands: with reviewFirst, a head
// the driver's own PASS does not cover is labelled and handed back
// (toReview); again: the head moved, its checks come first.
func (w *worker) reviewGate(ctx context.Context, reviewFirst bool, st *landState) (kind string, again bool, f *failure) {
	if !reviewFirst {
		return "", false, nil
	}
	pass, again, f := w.passed(ctx, st)
	switch {
	case f != nil || again || pass:
		return "", again, f
	}
	if f := w.underReview(ctx, st); f != nil {
		return "", false, f
	}
	w.q.logIssue(w.n, "pull request #%d is green at %s: to the reviewers", w.pr.Number, short(st.head))
	return toReview, false, nil
}

// stop says why watching a pull request ended without a verdict.
type stop struct {
	kind string // Merged (by someone else), Dropped (the issue vanished or closed), Blocked (the pull request vanished or closed)
	why  string
}

// waitChecks reads the checks of sha every CheckPoll until they are green,
// red, or time out. since is when sha was pushed and the pull request
// marked ready. No checks at all is green once two reads in a row agree
// and ChecksGrace has passed since; checks that cannot be read are waited
// for, never taken as green; pending or unreadable checks ChecksTimeout
// after since give "timeout" (with the checks last read, nil if none
// could be). A stop is returned when the issue or the pull request
// vanished or closed.
func (w *worker) waitChecks(ctx context.Context, sha string, since time.Time) (verdict string, checks []Check, st *stop) {
	q := w.q
	empty := 0
	unreadable, graceLogged := false, false
	for {
		// The pull request first: merged by someone else, it closed the
		// issue too (GitHub does for the default branch), and that is a
		// merge, not a drop.
		if p, err := q.gh.PR(ctx, w.pr.Number); err != nil {
			if errors.Is(err, ErrNotFound) {
				return "", nil, &stop{Blocked, fmt.Sprintf("pull request #%d vanished", w.pr.Number)}
			}
		} else {
			switch {
			case p.Merged:
				return "", nil, &stop{Merged, ""}
			case p.State != "open":
				return "", nil, &stop{Blocked, fmt.Sprintf("pull request #%d was closed without merging", p.Number)}
			}
		}
		if why := q.awayWhy(w.n); why != "" {
			return "", nil, &stop{Dropped, why}
		}
		if is, err := q.gh.Issue(ctx, w.n); err != nil {
			if why := goneWhy(err); why != "" {
				return "", nil, &stop{Dropped, why}
			}
		} else if why := q.goneState(is); why != "" {
			return "", nil, &stop{Dropped, why}
		}
		cs, err := q.gh.Checks(ctx, sha)
		waited := q.clock.Now().Sub(since)
		switch {
		case ctx.Err() != nil:
			return "", nil, nil
		case err != nil:
			if !unreadable {
				q.logIssue(w.n, "checks of %s cannot be read (%v); waiting", short(sha), err)
			}
			unreadable = true
			if waited >= q.cfg.ChecksTimeout {
				return "timeout", checks, nil
			}
		case len(cs) == 0:
			unreadable = false
			checks = cs
			if empty++; empty >= 2 && waited >= q.cfg.ChecksGrace {
				return "green", nil, nil
			}
			if !graceLogged {
				q.logIssue(w.n, "no checks on %s yet; none counts as green after CHECKS_GRACE (%s)", short(sha), q.cfg.ChecksGrace)
				graceLogged = true
			}
		default:
			unreadable = false
			empty = 0
			checks = cs
			if v, _ := Verdict(cs); v != "pending" {
				return v, cs, nil
			}
			if waited >= q.cfg.ChecksTimeout {
				return "timeout", cs, nil
			}
		}
		if err := q.clock.Sleep(ctx, q.cfg.CheckPoll); err != nil {
			return "", nil, nil
		}
	}
}

// goneWhy says why an issue whose read failed with err went away: a
// transfer (301) or a transfer to a repository the token cannot read, or
// a deletion (404); "" for any other error (unknown: read again later).
func goneWhy(err error) string {
	switch {
	case errors.Is(err, ErrMoved):
		return "it was transferred to another repository (GitHub answers 301)"
	case errors.Is(err, ErrNotFound):
		return "it was transferred to a repository this token cannot read, or deleted (GitHub answers 404)"
	}
	return ""
}

// goneState says why an issue this driver works on, as read now, is no
// longer the driver's: closed, or taken out of the queue (neither
// CLAIM_LABEL nor READY_LABEL on it); "" while it is still ours.
func (q *Queue) goneState(is *Issue) string {
	switch {
	case is.State != "open" && is.StateReason != "":
		return "it was closed (" + strings.ReplaceAll(is.StateReason, "_", " ") + ")"
	case is.State != "open":
		return "it was closed"
	case !is.HasLabel(q.cfg.Labels.Claim) && !is.HasLabel(q.cfg.Labels.Ready):
		return fmt.Sprintf("it was taken out of the queue (%s and %s are off)", q.cfg.Labels.Claim, q.cfg.Labels.Ready)
	}
	return ""
}

// pendingNames are the names of the checks still pending.
func pendingNames(cs []Check) []string {
	var out []string
	for _, c := range cs {
		if c.State == "pending" {
			out = append(out, c.Name)
		}
	}
	return out
}
