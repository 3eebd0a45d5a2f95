package issues

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/secret"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// failure is why an attempt did not succeed.
type failure struct {
	// reason: the scheduler's (exit, no-done, gate, prepare, worktree, …),
	// then the landing's (push, checks, merge, pull request).
	reason state.Reason
	detail string
	log    string // the log that shows it
	checks []string
	// head is the commit whose checks (or review) failed: a repair must
	// go beyond it. red: the checks were red (not pending).
	head string
	red  bool
	// interrupted: the driver is stopping; nothing failed. away: why the
	// issue left the queue while it landed (closed, transferred, …).
	interrupted bool
	away        string
}

func (f *failure) Error() string {
	switch {
	case f.interrupted:
		return "interrupted"
	case f.away != "":
		return f.away
	case f.detail == "":
		return string(f.reason)
	case f.reason == "":
		return f.detail
	}
	return string(f.reason) + ": " + f.detail
}

// worker is one issue's GitHub side: its claim round, branch, pull
// request and heartbeat, and what records its end there (finish, block).
// The scheduler runs its agents and gate (package work); Land pushes and
// merges through it.
type worker struct {
	q      *Queue
	is     *Issue
	n      int
	id     string // "#n"
	branch string
	wt     string
	round  int64
	pr     *PR
	pushed bool
	// unpushed says why the branch was not pushed (a secret in it).
	unpushed string
	// approvalAsked: APPROVAL_LABEL was put on; handNote: why the pull
	// request is handed to a human, when not for a plain review.
	approvalAsked bool
	handNote      string
	stopHB        func()
}

func (q *Queue) logIssue(n int, format string, args ...any) {
	q.logf("#%d: %s", n, fmt.Sprintf(format, args...))
}

// release gives up our claim (on interrupt): a release comment, then the
// labels back to READY_LABEL.
func (q *Queue) release(ctx context.Context, n int, round int64, why string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	body := fmt.Sprintf("claudopilot instance %s stopped (%s) and released its claim; the issue is queued again.\n%s", q.instance, why, releaseMarker(q.instance, q.instance, round))
	if _, err := q.gh.PostComment(ctx, n, body); err != nil {
		q.logIssue(n, "could not release the claim: %v", err)
		return
	}
	if err := q.requeueLabels(ctx, n); err != nil {
		q.logIssue(n, "could not restore the labels: %v", err)
	}
	q.logIssue(n, "released the claim (%s)", why)
}

// heartbeat repeats our claim comment every ClaimStale/2 until a pull
// request is open (which keeps the claim from going stale on its own) or
// the work ends, so a long agent run is not mistaken for a crash.
func (w *worker) heartbeat(ctx context.Context) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(max(w.q.cfg.ClaimStale/2, time.Second))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := w.q.gh.PostComment(ctx, w.n, claimBody(w.q.instance, w.round)); err != nil && ctx.Err() == nil {
					w.q.logIssue(w.n, "claim heartbeat: %v", err)
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// checksLog writes the failing checks, for the supervisor, and returns
// its path.
func (w *worker) checksLog(checks []Check) string {
	var b strings.Builder
	for _, c := range checks {
		fmt.Fprintf(&b, "%s: %s: %s\n", c.Name, c.State, c.Detail)
	}
	p := w.logPath("checks")
	_ = os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		return ""
	}
	return p
}

// logPath is the next <kind>-<n>.log of the issue.
func (w *worker) logPath(kind string) string {
	return filepath.Join(w.q.LogDir(w.n), fmt.Sprintf("%s-%d.log", kind, proc.NextLog(w.q.LogDir(w.n), kind)))
}

// fetch updates refs/remotes/<remote>/<branch>. Fetches run one at a time
// (git locks refs) and never beside a worktree add, which the repository's
// shared worktree lock sees to (worktree.Client.Fetch).
func (q *Queue) fetch(ctx context.Context, branch string) error {
	err := q.net.Fetch(ctx, q.cfg.Remote, fmt.Sprintf("+refs/heads/%s:refs/remotes/%s/%s", branch, q.cfg.Remote, branch))
	if err != nil {
		return fmt.Errorf("fetch %s from %s: %w", branch, q.cfg.Remote, err)
	}
	return nil
}

// sync brings refs/remotes/<remote>/<branch> to the branch's tip on
// GitHub for each branch GitHub has (GitHub.BranchTip, one request each
// on the kept-alive connection), fetching (all in one fetch) only the
// branches whose tip is not already that ref: a fetch that brings
// nothing was 4 processes (git, its upload-pack through sh, the
// connectivity check), an ls-remote 3. tips is each branch's tip; a
// branch GitHub lacks is absent. A tip that cannot be read is an error.
func (q *Queue) sync(ctx context.Context, branches ...string) (tips map[string]string, err error) {
	r := q.cfg.Remote
	tips = map[string]string{}
	for _, b := range branches {
		tip, err := q.gh.BranchTip(ctx, b)
		switch {
		case errors.Is(err, ErrNotFound):
			continue
		case err != nil:
			return nil, fmt.Errorf("the tip of %s: %w", b, err)
		}
		tips[b] = tip
	}
	var specs []string
	for _, b := range branches {
		tip, ok := tips[b]
		if !ok {
			continue
		}
		if have, err := q.git.RevParse(ctx, "refs/remotes/"+r+"/"+b); err == nil && have == tip {
			continue
		}
		specs = append(specs, fmt.Sprintf("+refs/heads/%s:refs/remotes/%s/%s", b, r, b))
	}
	if len(specs) > 0 {
		if err := q.net.Fetch(ctx, r, specs...); err != nil {
			return nil, fmt.Errorf("fetch %s from %s: %w", strings.Join(branches, ", "), r, err)
		}
	}
	return tips, nil
}

// liveBase brings refs/remotes/<remote>/<base> to the base's tip on
// GitHub (sync: one request, a fetch only when the clone's ref is not
// that tip) and returns that ref's commit; a base moved again before the
// fetch is fetched as it is then. A tip that cannot be read is an error
// (a base GitHub lacks: ErrNotFound): nothing is taken as live then.
func (q *Queue) liveBase(ctx context.Context) (string, error) {
	tips, err := q.sync(ctx, q.cfg.Base)
	if err != nil {
		return "", err
	}
	if tips[q.cfg.Base] == "" {
		return "", fmt.Errorf("the tip of %s: %w: GitHub has no such branch", q.cfg.Base, ErrNotFound)
	}
	return q.git.RevParse(ctx, "refs/remotes/"+q.cfg.Remote+"/"+q.cfg.Base)
}

// ensureWorktree makes or finds the issue's worktree on its branch: a
// kept worktree or branch (an earlier attempt), else the remote's branch
// (another machine's attempt), else a new branch from <remote>/<base>. A
// branch that existed gets <remote>/<base> merged in (a conflicting merge
// is abandoned: the pull request will show the conflict). fresh is true
// when the worktree was made now.
// moveOldWorktree moves the issue's worktree from where versions before
// the one layout put it (.claudopilot/worktrees/issue-N), when it is there
// on the issue's branch: a phase's worktree (on auto/…) is never touched.
func (q *Queue) moveOldWorktree(ctx context.Context, w *worker) error {
	old := q.oldWorktreePath(w.n)
	if old == w.wt {
		return nil
	}
	if _, err := os.Stat(filepath.Join(w.wt, ".git")); err == nil {
		return nil
	}
	at, ok, err := q.git.WorktreeOf(ctx, w.branch)
	if err != nil || !ok {
		return err
	}
	if ra, _ := filepath.EvalSymlinks(at); ra != "" {
		at = ra
	}
	if ro, _ := filepath.EvalSymlinks(old); ro != "" {
		old = ro
	}
	if at != old {
		return nil
	}
	return q.git.MoveWorktree(ctx, old, w.wt)
}

// push pushes the branch to the remote (a fast-forward; never forced),
// once scanPush found nothing in it to hide.
func (w *worker) push(ctx context.Context) *failure {
	q := w.q
	var tree worktree.ChangeReader
	if f := w.scanPush(ctx, &tree); f != nil {
		return f
	}
	if f := w.protected(ctx, &tree); f != nil {
		return f // never pushed: merged, it would steer every clone's next run
	}
	err := q.net.PushBranch(ctx, q.cfg.Remote, w.branch)
	if err != nil {
		if ctx.Err() != nil {
			return &failure{interrupted: true}
		}
		return &failure{reason: state.ReasonPush, detail: err.Error()}
	}
	return nil
}

// scanPush checks what a push of the branch would publish beyond
// <remote>/<base>: every commit's added lines and message, for the
// driver's own secrets (the token, raw, URL-escaped, base64) and the
// secret shapes the local landing refuses (package secret). A hit is a
// failure with reason secret naming file and line, never the value; a
// scan that cannot run is one too (it fails closed). Nothing is pushed
// then: unpushed says why, for the block comment.
//
// tree reads the lines the branch's tree adds over <remote>/<base>'s, as
// the scan reads them (Scanner.Tree): the protected-file check's changes
// when <remote>/<base> is the branch's merge base.
func (w *worker) scanPush(ctx context.Context, tree *worktree.ChangeReader) *failure {
	q := w.q
	rep, err := (&secret.Scanner{Known: q.known(), Tree: tree}).Landing(ctx, q.git, "refs/remotes/"+q.cfg.Remote+"/"+q.cfg.Base, "refs/heads/"+w.branch)
	found := rep.Found
	switch {
	case ctx.Err() != nil:
		return &failure{interrupted: true}
	case err != nil:
		w.unpushed = "the secret scan could not run: " + err.Error()
		return &failure{reason: state.ReasonSecret, detail: "nothing was pushed: " + w.unpushed}
	case len(found) > 0:
		w.unpushed = secret.Describe(found)
		q.logIssue(w.n, "not pushed: %s", w.unpushed)
		return &failure{reason: state.ReasonSecret, detail: "nothing was pushed: " + w.unpushed}
	}
	return nil
}

// pushKept pushes a failed attempt's branch, if it has work beyond the
// base, so it is kept where people and other instances can see it.
func (w *worker) pushKept(ctx context.Context) {
	q := w.q
	if ok, err := q.git.BranchExists(ctx, w.branch); err != nil || !ok {
		return
	}
	n, err := q.git.CountCommits(ctx, "refs/remotes/"+q.cfg.Remote+"/"+q.cfg.Base, "refs/heads/"+w.branch)
	if err != nil || n == 0 {
		return
	}
	if f := w.push(ctx); f != nil {
		q.logIssue(w.n, "could not push the kept branch: %v", f)
		return
	}
	w.pushed = true
}

// follow brings the local branch to the remote's head sha after someone
// else pushed to the pull request.
func (w *worker) follow(ctx context.Context, sha string) error {
	q := w.q
	if err := q.fetch(ctx, w.branch); err != nil {
		return err
	}
	if err := q.git.FastForward(ctx, w.wt, sha); err != nil {
		return fmt.Errorf("the pull request's branch moved to %s, which is not a fast-forward of ours: %w", short(sha), err)
	}
	return nil
}

// block records a failure on GitHub: ONE comment with the reason and the
// scrubbed tail of the log (ending our round), BLOCKED_LABEL on,
// CLAIM_LABEL off. The branch and the pull request stay.
func (w *worker) block(ctx context.Context, f *failure) error {
	q := w.q
	var b strings.Builder
	b.WriteString("claudopilot could not finish this issue")
	if f.reason != "" {
		fmt.Fprintf(&b, ": **%s**", f.reason)
	}
	if f.detail != "" {
		fmt.Fprintf(&b, " (%s)", f.detail)
	}
	b.WriteString(".\n")
	if f.log != "" {
		if lines, err := proc.TailFile(f.log, 40); err == nil && len(lines) > 0 {
			tail := strings.Join(q.scrub.ScrubLines(lines), "\n")
			fence := "```"
			for strings.Contains(tail, fence) {
				fence += "`"
			}
			fmt.Fprintf(&b, "\n<details><summary>The last lines of %s</summary>\n\n%s\n%s\n%s\n\n</details>\n", filepath.Base(f.log), fence, tail, fence)
		}
	}
	var keep string
	switch {
	case w.unpushed != "":
		keep = fmt.Sprintf("The branch `%s` is kept in the driver's clone and was not pushed: %s", w.branch, w.unpushed)
	case w.pr != nil:
		keep = fmt.Sprintf("The branch `%s` and pull request #%d are kept", w.branch, w.pr.Number)
	case w.pushed:
		keep = fmt.Sprintf("The branch `%s` is pushed and kept", w.branch)
	default:
		keep = "Nothing was committed"
	}
	fmt.Fprintf(&b, "\n%s. %s\n%s", keep, w.advice(f), endMarker(q.instance, w.round))
	if _, err := q.gh.PostComment(ctx, w.n, b.String()); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if err := q.gh.AddLabels(ctx, w.n, q.cfg.Labels.Blocked); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if err := q.gh.RemoveLabel(ctx, w.n, q.cfg.Labels.Claim); err != nil {
		return err
	}
	return q.gh.RemoveLabel(ctx, w.n, q.cfg.Labels.Ready)
}

// advice is what the block comment tells a person to do: never a retry
// that would fail the same way.
func (w *worker) advice(f *failure) string {
	l := w.q.cfg.Labels
	again := fmt.Sprintf("remove `%s` and add `%s`", l.Blocked, l.Ready)
	switch {
	case f.reason == state.ReasonMerge && strings.Contains(f.detail, methodRefused):
		return "Set MERGE_METHOD=auto (the default) or a method the repository allows and restart the queue; then " + again + "."
	case f.reason == state.ReasonMerge && strings.Contains(f.detail, mergeQueueOnly):
		return "Adding the pull request to GitHub's merge queue failed (see above): add it yourself, or " + again + " to have it added once more."
	case f.reason == state.ReasonSecret:
		return fmt.Sprintf("A retry continues on that branch: first take the secret out of its history (or delete the branch `%s` in the driver's clone to start over), then %s.", w.branch, again)
	case f.reason == state.ReasonProtected:
		return fmt.Sprintf("A retry continues on that branch: first put those files back as they are on the base (or delete the branch `%s` in the driver's clone to start over), then %s.", w.branch, again)
	}
	return "To try again, " + again + "."
}

// finish records a merged or review-ready pull request: a comment ending
// our round, the labels, the issue closed after a merge (GitHub closes it
// itself only for the default branch), and the local worktree removed.
func (w *worker) finish(ctx context.Context, kind string) error {
	q := w.q
	var msg string
	switch kind {
	case Merged:
		msg = "Merged."
		if w.pr != nil {
			msg = fmt.Sprintf("Merged in pull request #%d.", w.pr.Number)
		}
	case Review:
		msg = fmt.Sprintf("Pull request #%d is ready for review: its checks are green. Merge it to close this issue.", w.pr.Number)
		if w.handNote != "" {
			msg = w.handNote
		}
		for _, n := range []int{w.n, w.pr.Number} {
			if err := q.gh.AddLabels(ctx, n, q.cfg.Labels.Review); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
		}
		q.logIssue(w.n, "pull request #%d is ready for review", w.pr.Number)
	}
	if _, err := q.gh.PostComment(ctx, w.n, msg+"\n"+endMarker(q.instance, w.round)); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if err := q.gh.RemoveLabel(ctx, w.n, q.cfg.Labels.Claim); err != nil {
		return err
	}
	if kind == Merged && w.approvalAsked {
		for _, n := range []int{w.n, w.pr.Number} {
			if err := q.gh.RemoveLabel(ctx, n, q.cfg.Labels.Approval); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
		}
	}
	if kind == Merged {
		if is, err := q.gh.Issue(ctx, w.n); err == nil && is.State == "open" {
			if err := q.gh.CloseIssue(ctx, w.n); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
		}
	}
	if err := q.git.RemoveWorktree(ctx, w.wt); err != nil {
		return err
	}
	if ok, _ := q.git.BranchExists(ctx, w.branch); ok {
		return q.git.DeleteBranch(ctx, w.branch)
	}
	return nil
}
