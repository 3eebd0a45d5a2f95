package issues

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

// The queue as a landing strategy of the one scheduler (scheduler.Source):
// the scheduler runs an issue's agents and gate like a phase's, then calls
// Land, which does on GitHub what the local merge owner does for a phase;
// Record keeps the issue's labels and comments in step with the state the
// scheduler gives it. Red checks end a landing: the scheduler sends its
// supervisor (one supervisor policy for phases and issues) and lands
// again, and the landing carries on from where it stopped (the pull
// request, when its head was pushed, how often the base moved).

// landing is one issue's state between the scheduler's calls: from its
// claim (Claimed) or first landing to the state that ends it (Record).
type landing struct {
	w  *worker // the pull request, whether the branch is pushed, the round
	st landState
	// busy: a Land runs. Land is never called twice at once for one
	// issue; if it were, the second fails rather than race the first.
	busy bool
	// claimed: Claimed said the round, so Record need not read it.
	claimed bool
	// merged: a Land merged it; Record has not ended it yet.
	merged bool
	// stopHB stops the claim heartbeat; nil when none runs.
	stopHB func()
}

// landingOf returns issue n's landing, made on first use. q.landMu held.
func (q *Queue) landingOf(n int) *landing {
	if q.lands == nil {
		q.lands = map[int]*landing{}
	}
	l := q.lands[n]
	if l == nil {
		w := &worker{q: q, is: &Issue{Number: n}, n: n, id: IssueID(n), branch: Branch(n), wt: q.WorktreePath(n)}
		w.stopHB = func() { q.stopHeartbeat(n) }
		l = &landing{w: w}
		q.lands[n] = l
	}
	return l
}

// Claimed tells the queue that this instance holds issue id's claim in
// round (as the claim returned it, or claimState for a resumed issue):
// the comment that ends the issue's work closes that round. It starts the
// claim heartbeat (the claim comment again every CLAIM_STALE_HOURS/2, so
// a long agent run is not taken for a crash), which stops once the pull
// request is open (an open pull request keeps the claim alive), when
// Record ends the issue, or when ctx is done.
func (q *Queue) Claimed(ctx context.Context, id string, round int64) {
	n, ok := ParseIssueID(id)
	if !ok {
		return
	}
	q.landMu.Lock()
	l := q.landingOf(n)
	l.w.round, l.claimed = round, true
	old := l.stopHB
	l.stopHB = nil
	hb := l.w.pr == nil
	q.landMu.Unlock()
	if old != nil {
		old()
	}
	if !hb {
		return
	}
	stop := l.w.heartbeat(ctx)
	q.landMu.Lock()
	if q.lands[n] == l && l.stopHB == nil && l.w.pr == nil {
		l.stopHB, stop = stop, nil
	}
	q.landMu.Unlock()
	if stop != nil {
		stop()
	}
}

// stopHeartbeat stops issue n's claim heartbeat, if one runs.
func (q *Queue) stopHeartbeat(n int) {
	q.landMu.Lock()
	var stop func()
	if l := q.lands[n]; l != nil {
		stop, l.stopHB = l.stopHB, nil
	}
	q.landMu.Unlock()
	if stop != nil {
		stop()
	}
}

// Land lands issue j.ID ("#N") whose branch claudopilot/issue-N has tip
// j.Tip, which the scheduler's runner gated in the issue's worktree
// (WorktreePath). It pushes the branch (never forced), opens the pull
// request (a draft, or finds the open one from the branch) and marks it
// ready, waits for its checks (CHECKS_GRACE, CHECKS_TIMEOUT), and, with
// AUTO_MERGE, brings a branch whose base moved up to date and merges
// exactly the head whose checks passed. Outcomes:
//
//   - OK: merged (by us or by someone else); Commit is the merged head.
//   - Reason checks: red checks (Checks names them, LogPath lists them,
//     Commit is the red head a repair must go beyond), or checks still
//     pending (or unreadable) after CHECKS_TIMEOUT (Detail says so).
//   - Reason review with Commit set: the review gate's reviewers blocked
//     with rounds left; LogPath holds their findings for a worker. Without
//     Commit: still blocking after the last round, or the review could not
//     run (it fails closed).
//   - Away: green without AUTO_MERGE (handed to a human: the review label
//     on the issue and the pull request), or the issue was closed or
//     vanished. The queue records either itself.
//   - Reason push, pull request (closed without merging, or could not be
//     opened or readied), merge (refused, or the base or head kept
//     moving), conflict (the moved base does not merge into the branch;
//     Commit is the branch's head), worktree (the branch is not at the
//     gated tip).
//   - Err: ctx ended; nothing is recorded on GitHub.
//
// Land is called again for the same issue after each repair, and for
// several issues at once; it holds no agent slot.
func (q *Queue) Land(ctx context.Context, j scheduler.MergeJob) scheduler.MergeOutcome {
	out := scheduler.MergeOutcome{ID: j.ID}
	n, ok := ParseIssueID(j.ID)
	if !ok {
		out.Err = fmt.Errorf("land %s: not an issue id", j.ID)
		return out
	}
	q.landMu.Lock()
	l := q.landingOf(n)
	if l.busy {
		q.landMu.Unlock()
		out.Err = fmt.Errorf("land %s: already landing", j.ID)
		return out
	}
	l.busy = true
	if j.Title != "" {
		l.w.is.Title = j.Title
	}
	q.landMu.Unlock()
	defer func() {
		q.landMu.Lock()
		l.busy = false
		q.landMu.Unlock()
	}()
	if why := q.awayWhy(n); why != "" {
		// It went away while its agent ran: nothing is pushed.
		out.Away, out.Detail = true, why
		return out
	}
	w := l.w
	if w.is.Title == "" {
		w.is.Title = j.ID
	}
	kind, f := w.landJob(ctx, j, &l.st)
	pr := 0
	if w.pr != nil {
		pr = w.pr.Number
	}
	switch {
	case ctx.Err() != nil || (f != nil && f.interrupted):
		out.Err = fmt.Errorf("land %s: %w", j.ID, context.Cause(ctx))
	case f == nil && kind == Merged:
		out.OK, out.Commit = true, l.st.head
		q.landMu.Lock()
		l.merged = true
		q.landMu.Unlock()
	case f == nil && kind == toReview:
		out.Review, out.Commit = true, l.st.head
	case f == nil && kind == Review:
		q.addResult(Result{Number: n, Kind: Review, PR: pr})
		q.forget(n)
		q.keep(n, "the review hand-over", func(ctx context.Context) error {
			w.stopHB()
			return w.finish(ctx, Review)
		})
		out.Away = true
	case kind == Dropped:
		q.goneAway(n, f.away)
		out.Away, out.Detail = true, f.away
	default:
		out.Reason, out.Detail, out.LogPath, out.Checks, out.Commit = f.reason, f.detail, f.log, f.checks, f.head
		if f.reason == state.ReasonChecks && !f.red {
			// Checks still pending at CHECKS_TIMEOUT: nothing for a
			// repair to go beyond; the issue is blocked.
			out.Commit = ""
		}
	}
	return out
}

// landJob lands j: exactly what the runner gated, or the head this
// landing itself moved the branch to (the base merged in by
// update-branch), after recording the review gate's verdict when the
// loop hands one over (a BLOCKING one, or one not recorded, ends here).
func (w *worker) landJob(ctx context.Context, j scheduler.MergeJob, st *landState) (string, *failure) {
	if j.Tip != "" {
		sha, err := w.q.git.RevParse(ctx, "refs/heads/"+w.branch)
		switch {
		case err != nil:
			return "", &failure{reason: state.ReasonWorktree, detail: err.Error()}
		case sha != j.Tip && sha != st.head:
			return "", &failure{reason: state.ReasonWorktree, detail: fmt.Sprintf("%s is at %s, not at the gated tip %s", w.branch, short(sha), short(j.Tip))}
		}
	}
	if j.Verdict != nil {
		if f := w.recordVerdict(ctx, j.Verdict, st); f != nil {
			return "", f
		}
	}
	// No verdict, a PASS recorded, or a tree that moved under the
	// reviewers (handed back again).
	return w.landStep(ctx, j.ReviewFirst, st)
}

// forget drops issue n's landing: the issue has left the scheduler. The
// heartbeat's stop goes with the worker (worker.stopHB still reaches it
// until the bookkeeping has stopped it).
func (q *Queue) forget(n int) *landing {
	q.landMu.Lock()
	defer q.landMu.Unlock()
	l := q.lands[n]
	delete(q.lands, n)
	if l != nil {
		// The worker's stop no longer reaches the map, where a new claim
		// of the issue may start its own heartbeat.
		l.w.stopHB = func() {}
		if l.stopHB != nil {
			l.w.stopHB, l.stopHB = l.stopHB, nil
		}
	}
	return l
}

// Record hears the state the scheduler gives issue id and, off the
// caller's goroutine (the bookkeeping, see Bookkeep), records it on
// GitHub: merged: a comment ending our round, the claim label off, the
// issue closed, the local worktree and branch removed; blocked or failed:
// the branch pushed if it holds work, then one comment with the reason,
// the detail and the scrubbed tail of the log, BLOCKED_LABEL on,
// CLAIM_LABEL and READY_LABEL off. Other states record nothing. It never
// blocks.
func (q *Queue) Record(id string, st manifest.State, note scheduler.Note) {
	n, ok := ParseIssueID(id)
	if !ok {
		return
	}
	switch st {
	case manifest.Merged, manifest.Blocked, manifest.Failed:
	default:
		return
	}
	l := q.forget(n)
	claimed := l != nil && l.claimed
	var w *worker
	ls := &landState{}
	if l != nil {
		w, ls = l.w, &l.st
	} else {
		w = &worker{q: q, is: &Issue{Number: n}, n: n, id: IssueID(n), branch: Branch(n), wt: q.WorktreePath(n), stopHB: func() {}}
	}
	pr := 0
	if w.pr != nil {
		pr = w.pr.Number
	}
	// learn fills in what this run did not see: the round of a claim
	// Claimed was not told of, the pull request of an earlier run.
	learn := func(ctx context.Context, prState string) {
		if !claimed {
			if cs, _, err := q.claimState(ctx, n); err == nil && cs.Holder == q.instance {
				w.round = cs.Round
			}
		}
		if w.pr == nil {
			if p, err := q.gh.FindPR(ctx, w.branch, prState); err == nil && p != nil {
				w.pr = p
			}
		}
	}
	if st == manifest.Merged {
		q.addResult(Result{Number: n, Kind: Merged, PR: pr})
		q.keep(n, "the merge", func(ctx context.Context) error {
			w.stopHB()
			w.reviewDone(ctx, ls)
			learn(ctx, "all")
			return w.finish(ctx, Merged)
		})
		return
	}
	f := &failure{reason: note.Reason, detail: note.Detail, log: note.LogPath}
	if f.reason == "" && f.detail == "" {
		f.detail = "the scheduler marked it " + string(st)
	}
	q.addResult(Result{Number: n, Kind: Blocked, PR: pr, Reason: f.Error()})
	q.logIssue(n, "blocked: %s", f.Error())
	q.keep(n, "the block", func(ctx context.Context) error {
		w.stopHB()
		w.reviewDone(ctx, ls)
		learn(ctx, "open")
		w.pushKept(ctx)
		return w.block(ctx, f)
	})
}

// Release gives up this instance's claim on issue id, off the caller's
// goroutine (the bookkeeping): a release comment closing our round, and
// the labels back to READY_LABEL. For an issue the driver stops working
// without a state that ends it (an interrupt): call it before waiting on
// Bookkeep's channel. The branch and any pull request stay.
func (q *Queue) Release(id, why string) {
	n, ok := ParseIssueID(id)
	if !ok {
		return
	}
	l := q.forget(n)
	q.addResult(Result{Number: n, Kind: Interrupted, Reason: why})
	q.keep(n, "the release", func(ctx context.Context) error {
		round, known := int64(0), false
		if l != nil {
			l.w.stopHB()
			l.w.reviewDone(ctx, &l.st)
			round, known = l.w.round, l.claimed
		}
		if !known {
			cs, _, err := q.claimState(ctx, n)
			if err != nil {
				return err
			}
			if cs.Holder != q.instance {
				return nil // not ours (any more): nothing to give up
			}
			round = cs.Round
		}
		q.release(ctx, n, round, why)
		return nil
	})
}

// goneAway books that issue n left the driver's hands while it was worked
// on (closed, transferred, taken out of the queue: why), once: a Dropped
// result, and on GitHub (the bookkeeping) the heartbeat stopped, an open
// pull request from its branch closed with a comment saying why, the
// claim label off and a comment ending our round where the issue can
// still be written. The local worktree and branch are kept.
func (q *Queue) goneAway(n int, why string) {
	q.landMu.Lock()
	if q.away == nil {
		q.away = map[int]string{}
	}
	_, done := q.away[n]
	if !done {
		q.away[n] = why
	}
	q.landMu.Unlock()
	if done {
		return
	}
	l := q.forget(n)
	var w *worker
	if l != nil {
		w = l.w
	} else {
		w = &worker{q: q, is: &Issue{Number: n}, n: n, id: IssueID(n), branch: Branch(n), wt: q.WorktreePath(n), stopHB: func() {}}
	}
	pr := 0
	if w.pr != nil {
		pr = w.pr.Number
	}
	q.logIssue(n, "went away while worked on: %s; the worktree and branch %s are kept", why, w.branch)
	q.addResult(Result{Number: n, Kind: Dropped, PR: pr, Reason: why})
	q.keep(n, "going away", func(ctx context.Context) error {
		w.stopHB()
		if p, err := q.gh.FindPR(ctx, w.branch, "open"); err == nil && p != nil {
			msg := fmt.Sprintf("Closed by claudopilot: issue #%d went away while it was worked on (%s). The branch `%s` is kept.", n, why, w.branch)
			if _, err := q.gh.PostComment(ctx, p.Number, msg); err != nil {
				return err
			}
			if err := q.gh.ClosePR(ctx, p.Number); err != nil {
				return err
			}
			q.logIssue(n, "closed pull request #%d", p.Number)
		}
		// A transferred or deleted issue answers 404 or 301: nothing
		// more of ours can be written there.
		if err := q.gh.RemoveLabel(ctx, n, q.cfg.Labels.Claim); err != nil {
			return nil
		}
		msg := fmt.Sprintf("claudopilot stopped working on this issue: %s. Nothing more is pushed; the branch `%s` is kept in the clone of instance %s.", why, w.branch, q.instance)
		if _, err := q.gh.PostComment(ctx, n, msg+"\n"+endMarker(q.instance, w.round)); err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrMoved) {
			return err
		}
		return nil
	})
}

// landingNow reports whether issue n is being landed, or was merged and
// not yet ended: its landing watches the issue itself (a merge closes it).
func (q *Queue) landingNow(n int) bool {
	q.landMu.Lock()
	defer q.landMu.Unlock()
	l := q.lands[n]
	return l != nil && (l.busy || l.merged)
}

// clearAway forgets that issue n went away: it is queued again.
func (q *Queue) clearAway(n int) {
	q.landMu.Lock()
	defer q.landMu.Unlock()
	delete(q.away, n)
}

// awayWhy is why issue n went away while worked on, "" if it did not.
func (q *Queue) awayWhy(n int) string {
	q.landMu.Lock()
	defer q.landMu.Unlock()
	return q.away[n]
}

// addResult appends r to the queue's summary (Summary).
func (q *Queue) addResult(r Result) {
	q.sumMu.Lock()
	defer q.sumMu.Unlock()
	q.sum.Results = append(q.sum.Results, r)
}

// Summary is what Land and Record have recorded so far: one Result per
// issue that ended (merged, for review, blocked, dropped).
func (q *Queue) Summary() Summary {
	q.sumMu.Lock()
	defer q.sumMu.Unlock()
	return Summary{Results: append([]Result(nil), q.sum.Results...), Skipped: append([]int(nil), q.sum.Skipped...), Released: append([]int(nil), q.sum.Released...)}
}

// bookDrain bounds the bookkeeping once its context has ended (an
// interrupt): what is queued is still recorded, as a worker's end was,
// but no longer than this.
const bookDrain = 2 * time.Minute

// books is the queue's bookkeeping on GitHub that neither the scheduler's
// loop nor a landing waits for: Record and Land queue tasks, and one
// goroutine (Bookkeep) runs them in order.
type books struct {
	mu      sync.Mutex
	tasks   []bookTask
	wake    chan struct{} // cap 1: tasks were queued
	running bool          // the goroutine runs (Bookkeep); tasks queued meanwhile wait for the next
}

type bookTask struct {
	n    int
	what string
	do   func(ctx context.Context) error
}

// keep queues a bookkeeping task for issue n; what names it in a log line
// if it fails.
func (q *Queue) keep(n int, what string, do func(ctx context.Context) error) {
	b := &q.books
	b.mu.Lock()
	if b.wake == nil {
		b.wake = make(chan struct{}, 1)
	}
	b.tasks = append(b.tasks, bookTask{n: n, what: what, do: do})
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Bookkeep starts the goroutine that records on GitHub what Record and
// Land queue, one task at a time, in order. When ctx ends, what is queued
// is still done, within bookDrain, and the returned channel is closed once
// it has been. Tasks queued while none runs wait for the next Bookkeep (a
// queue run again); while one runs, Bookkeep returns a closed channel.
func (q *Queue) Bookkeep(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	b := &q.books
	b.mu.Lock()
	if b.wake == nil {
		b.wake = make(chan struct{}, 1)
	}
	if b.running {
		b.mu.Unlock()
		close(done)
		return done
	}
	b.running = true
	b.mu.Unlock()
	go q.bookkeep(ctx, done)
	return done
}

func (q *Queue) bookkeep(ctx context.Context, done chan<- struct{}) {
	b := &q.books
	defer close(done)
	var fin context.Context // set when ctx ends: bounds the drain
	for {
		if fin == nil && ctx.Err() != nil {
			var cancel context.CancelFunc
			fin, cancel = context.WithTimeout(context.WithoutCancel(ctx), bookDrain)
			defer cancel()
		}
		b.mu.Lock()
		var t *bookTask
		if len(b.tasks) > 0 {
			t = &b.tasks[0]
			b.tasks = b.tasks[1:]
		} else if fin != nil {
			b.running = false
		}
		b.mu.Unlock()
		switch {
		case t != nil:
			tctx, cancel := fin, context.CancelFunc(func() {})
			if tctx == nil {
				tctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), bookDrain)
			}
			if err := t.do(tctx); err != nil {
				q.logIssue(t.n, "could not record %s on GitHub: %v", t.what, err)
			}
			cancel()
		case fin != nil:
			return
		default:
			select {
			case <-b.wake:
			case <-ctx.Done():
			}
		}
	}
}
