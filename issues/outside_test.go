package issues

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/internal/gittest"
	"github.com/claudopilot/claudopilot/issues/ghfake"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/review"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

// Tests of Land and Record, the queue as the scheduler's landing strategy:
// the scheduler's runner is stood in for by commits made in the issue's
// worktree, its supervisor by one more commit there.

// lander is one test's queue, claimed issue and bookkeeping.
type lander struct {
	e    *env
	q    *Queue
	log  *syncBuf
	n    int
	id   string
	ctx  context.Context
	stop context.CancelFunc
	done <-chan struct{} // the bookkeeping drained
	// inWorktree: commit makes its commits in the issue's worktree.
	inWorktree bool
}

// newLander makes a queue, claims issue n for it (as the coordinator's
// claim will) and starts its bookkeeping.
func newLander(t *testing.T, e *env, n int, mod func(*Config)) *lander {
	t.Helper()
	log := &syncBuf{}
	q := e.queue("w", log, mod)
	// An upper bound for a hung landing, not a wait.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	won, round, why, err := q.claim(ctx, n)
	if err != nil || !won {
		t.Fatalf("claim: %v %s", err, why)
	}
	q.Claimed(ctx, IssueID(n), round)
	bctx, stop := context.WithCancel(ctx)
	l := &lander{e: e, q: q, log: log, n: n, id: IssueID(n), ctx: ctx, stop: stop}
	l.done = q.Bookkeep(bctx)
	t.Cleanup(func() { l.drain() })
	return l
}

// commit commits path (with body) on the issue's branch, made on first
// use from origin's main as the clone has it (the runner fetches it first;
// a fresh clone has it already), and returns the new tip: what the
// runner's agent (or the supervisor) would leave. Written into the clone
// by gittest.Import (no process), no worktree checked out: a landing reads
// the branch, never the worktree's files, and finish removes a worktree
// that is not there as one that is (git worktree prune, not remove). A
// worktree and a commit in it were 7 processes, and each further commit 3
// (add -A, diff --cached, commit). inWorktree commits in the worktree, as
// the runner does, for the landing that follows a moved head into it and
// the removal of the worktree after a merge (TestLandRedChecksThenRepaired).
func (l *lander) commit(t *testing.T, path, body string) string {
	t.Helper()
	if l.inWorktree {
		return l.commitInWorktree(t, path, body)
	}
	q, ref := l.q, "refs/heads/"+Branch(l.n)
	from, err := q.git.RevParse(l.ctx, ref)
	if err != nil {
		if from, err = q.git.RevParse(l.ctx, "refs/remotes/origin/main"); err != nil {
			t.Fatal(err)
		}
	}
	return gittest.Import(t, append(l.e.genv, "GIT_AUTHOR_NAME=runner", "GIT_AUTHOR_EMAIL=runner@example.com",
		"GIT_COMMITTER_NAME=runner", "GIT_COMMITTER_EMAIL=runner@example.com"), q.git.Dir,
		gittest.Commit{Ref: ref, From: from, Message: "work on " + l.id + ": " + path + "\n", Files: map[string]string{path: body}})[0]
}

// commitInWorktree is commit made in the issue's worktree (added on first
// use from origin's main as the clone has it), as the runner's agent does.
func (l *lander) commitInWorktree(t *testing.T, path, body string) string {
	t.Helper()
	q, wt := l.q, l.q.WorktreePath(l.n)
	if _, err := os.Stat(filepath.Join(wt, ".git")); err != nil {
		base, err := q.git.RevParse(l.ctx, "refs/remotes/origin/main")
		if err != nil {
			t.Fatal(err)
		}
		if err := q.git.AddWorktree(l.ctx, wt, Branch(l.n), base); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(wt, path), body)
	if _, err := q.git.CommitAll(l.ctx, wt, "work on "+l.id+": "+path); err != nil {
		t.Fatal(err)
	}
	tip, err := q.git.RevParse(l.ctx, "refs/heads/"+Branch(l.n))
	if err != nil {
		t.Fatal(err)
	}
	return tip
}

func (l *lander) land(tip string) scheduler.MergeOutcome {
	return l.q.Land(l.ctx, scheduler.MergeJob{ID: l.id, Title: "issue " + l.id, Tip: tip})
}

// heartbeat reports whether the issue's claim heartbeat runs.
func (l *lander) heartbeat() bool {
	l.q.landMu.Lock()
	defer l.q.landMu.Unlock()
	return l.q.lands[l.n] != nil && l.q.lands[l.n].stopHB != nil
}

// drain ends the bookkeeping and waits until what was queued is done.
func (l *lander) drain() {
	l.stop()
	<-l.done
}

// TestLandRedChecksThenRepaired: red checks end the landing with the red
// head and the failing checks' names and log; after a repair commit the
// next Land goes on with the same pull request and merges; Record(merged)
// then closes the issue with one comment ending our round.
func TestLandRedChecksThenRepaired(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fake.SetCI(e.ci())
	n := e.fake.NewIssue("alice", "needs CI", "x", []string{"agent-ready"}, "")
	l := newLander(t, e, n, nil)
	l.inWorktree = true // the worktree is removed after the merge
	red := l.commit(t, "work.txt", "work\n")
	if !l.heartbeat() {
		t.Errorf("no claim heartbeat after Claimed")
	}
	out := l.land(red)
	if l.heartbeat() {
		t.Errorf("the claim heartbeat still runs with the pull request open")
	}
	if out.Reason != state.ReasonChecks || out.Commit != red || !slices.Equal(out.Checks, []string{"ci/test"}) || !strings.Contains(out.Detail, "failing checks: ci/test") || out.OK || out.Away {
		t.Fatalf("red checks: %+v\n%s", out, l.log)
	}
	if b, err := os.ReadFile(out.LogPath); err != nil || !strings.Contains(string(b), "ci/test: failure") {
		t.Errorf("checks log %q: %v %q", out.LogPath, err, b)
	}
	fixed := l.commit(t, "FIXED", "fixed\n")
	out = l.land(fixed)
	if !out.OK || out.Commit != fixed || !e.onMain("FIXED") {
		t.Fatalf("after the repair: %+v\n%s", out, l.log)
	}
	if p := e.fake.Pulls(); len(p) != 1 || !p[0].Merged {
		t.Errorf("pull requests %+v", p)
	}
	l.q.Record(l.id, manifest.Merged, scheduler.Note{})
	l.drain()
	is := e.issue(n)
	if is.State != "closed" || hasLabel(is, "agent-running") || commentsWith(is, "Merged in pull request #2.") != 1 || commentsWith(is, "claudopilot:end instance="+l.q.Instance()) != 1 {
		t.Errorf("after Record(merged):\n%s", dump(e, n))
	}
	if _, err := os.Stat(l.q.WorktreePath(n)); err == nil {
		t.Errorf("the worktree is still there")
	}
	if s := l.q.Summary(); s.Count(Merged) != 1 || len(s.Results) != 1 || s.Results[0].PR != 2 {
		t.Errorf("summary %+v", s)
	}
}

// TestLandDraftCIIsNotGreen: CI that skips drafts reports no checks on
// one; the pull request is ready before its checks are read, so the real
// (red) checks are seen.
func TestLandDraftCIIsNotGreen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fake.SetCI(e.ci())
	e.fake.SetCIRules(ghfake.CIRules{SkipDrafts: true})
	n := e.fake.NewIssue("alice", "draft CI", "x", []string{"agent-ready"}, "")
	l := newLander(t, e, n, nil)
	if out := l.land(l.commit(t, "work.txt", "work\n")); out.Reason != state.ReasonChecks || out.OK {
		t.Fatalf("a draft's missing checks read as green: %+v\n%s", out, l.log)
	}
	readyBeforeChecks(t, e)
}

// TestLandChecksGrace: checks that appear a minute after the push are
// seen (red) with the default CHECKS_GRACE; without CI, the merge comes
// only CHECKS_GRACE after the pull request was ready.
func TestLandChecksGrace(t *testing.T) {
	t.Parallel()
	t.Run("late checks", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.fake.SetCI(e.ci())
		e.fake.SetCIRules(ghfake.CIRules{Delay: time.Minute})
		n := e.fake.NewIssue("alice", "late CI", "x", []string{"agent-ready"}, "")
		l := newLander(t, e, n, func(c *Config) { c.ChecksGrace, c.CheckPoll = 0, 10*time.Second })
		if out := l.land(l.commit(t, "work.txt", "work\n")); out.Reason != state.ReasonChecks || !slices.Equal(out.Checks, []string{"ci/test"}) {
			t.Fatalf("late red checks not seen: %+v\n%s", out, l.log)
		}
	})
	t.Run("no CI", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		n := e.fake.NewIssue("alice", "no CI", "x", []string{"agent-ready"}, "")
		l := newLander(t, e, n, func(c *Config) { c.ChecksGrace, c.CheckPoll = 0, 10*time.Second })
		if out := l.land(l.commit(t, "work.txt", "work\n")); !out.OK {
			t.Fatalf("%+v\n%s", out, l.log)
		}
		var ready, merged time.Time
		for _, r := range e.fake.Requests() {
			switch {
			case r.Path == "/graphql" && strings.Contains(r.Body, "markPullRequestReadyForReview"):
				ready = r.At
			case strings.HasSuffix(r.Path, "/merge"):
				merged = r.At
			}
		}
		if d := merged.Sub(ready); d < 120*time.Second {
			t.Errorf("merged %s after the pull request was ready, before CHECKS_GRACE (120s)", d)
		}
		if !strings.Contains(l.log.String(), "none counts as green after CHECKS_GRACE (2m0s)") {
			t.Errorf("no grace line:\n%s", l.log)
		}
	})
}

// TestLandChecksTimeoutThenBlocked: checks pending CHECKS_TIMEOUT after
// the push end the landing with reason checks and a detail that says so;
// Record(blocked) then posts one comment with the reason, the detail and
// the scrubbed log tail, and sets the labels.
// (No Commit: nothing for a repair to go beyond, so the scheduler parks it.)
func TestLandChecksTimeoutThenBlocked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fake.SetCI(func(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
		return []ghfake.CheckRun{{Name: "ci/slow", Status: "in_progress"}}, nil
	})
	n := e.fake.NewIssue("alice", "slow CI", "x", []string{"agent-ready"}, "")
	l := newLander(t, e, n, func(c *Config) { c.ChecksTimeout, c.CheckPoll = 10*time.Minute, time.Minute })
	tip := l.commit(t, "work.txt", "work\n")
	out := l.land(tip)
	if out.Reason != state.ReasonChecks || out.Commit != "" || !strings.Contains(out.Detail, "still pending after CHECKS_TIMEOUT (10m0s): ci/slow") {
		t.Fatalf("%+v\n%s", out, l.log)
	}
	logPath := filepath.Join(e.dir, "supervisor.log")
	writeFile(t, logPath, "first line\nthe token is "+token+"\nlast line\n")
	l.q.Record(l.id, manifest.Blocked, scheduler.Note{Reason: out.Reason, Detail: out.Detail, LogPath: logPath})
	l.drain()
	is := e.issue(n)
	if !hasLabel(is, "agent-blocked") || hasLabel(is, "agent-running") || hasLabel(is, "agent-ready") || is.State != "open" {
		t.Errorf("labels:\n%s", dump(e, n))
	}
	if commentsWith(is, "**checks** (checks of "+short(tip)+" still pending after CHECKS_TIMEOUT (10m0s): ci/slow)") != 1 ||
		commentsWith(is, "last line") != 1 || commentsWith(is, "pull request #2 are kept") != 1 || commentsWith(is, "claudopilot:end instance="+l.q.Instance()) != 1 {
		t.Errorf("block comment:\n%s", dump(e, n))
	}
	for _, c := range is.Comments {
		if strings.Contains(c.Body, token) {
			t.Errorf("the token was posted: %s", c.Body)
		}
	}
	if p := e.fake.Pulls(); len(p) != 1 || p[0].Merged || p[0].State != "open" {
		t.Errorf("pull request %+v", p)
	}
	if s := l.q.Summary(); s.Count(Blocked) != 1 || !strings.Contains(s.Results[0].Reason, "checks: checks of") {
		t.Errorf("summary %+v", s)
	}
}

// TestRecordFailedBeforeLanding: a node that failed in the runner (never
// landed) is blocked with its reason; its branch, holding work, is pushed
// and kept.
func TestRecordFailedBeforeLanding(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "red gate", "x", []string{"agent-ready"}, "")
	l := newLander(t, e, n, nil)
	l.commit(t, "work.txt", "work\n")
	l.q.Record(l.id, manifest.Running, scheduler.Note{})
	l.q.Record(l.id, manifest.Failed, scheduler.Note{Reason: state.ReasonGate, Detail: "the gate is red: make test"})
	l.drain()
	is := e.issue(n)
	if !hasLabel(is, "agent-blocked") || hasLabel(is, "agent-running") || commentsWith(is, "**gate** (the gate is red: make test)") != 1 ||
		commentsWith(is, "The branch `claudopilot/issue-1` is pushed and kept") != 1 {
		t.Errorf("after Record(failed):\n%s", dump(e, n))
	}
	if !e.fake.Has("claudopilot/issue-1", "work.txt") {
		t.Errorf("the branch with work was not pushed")
	}
}

// TestLandBaseMovedIsUpdatedBeforeMerge: the base moved after the checks
// ran: the branch is brought up to date (update-branch with the head's sha
// expected), the new head's checks are read, and that head is merged.
func TestLandBaseMovedIsUpdatedBeforeMerge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mover := &baseMover{e: e, path: "other.txt"}
	e.fake.SetCI(mover.ci)
	n := e.fake.NewIssue("alice", "moving base", "x", []string{"agent-ready"}, "")
	l := newLander(t, e, n, nil)
	l.inWorktree = true // the landing follows the moved head into it
	tip := l.commit(t, "work.txt", "work\n")
	out := l.land(tip)
	if !out.OK || out.Commit == tip || !e.onMain("other.txt") || !e.onMain("work.txt") {
		t.Fatalf("%+v\n%s", out, l.log)
	}
	var updates int
	var merged string
	for _, r := range e.fake.Requests() {
		switch {
		case r.Method == "PUT" && strings.HasSuffix(r.Path, "/update-branch"):
			updates++
			if !strings.Contains(r.Body, `"expected_head_sha":"`+tip+`"`) {
				t.Errorf("update-branch without the head's sha expected: %s", r.Body)
			}
		case r.Method == "PUT" && strings.HasSuffix(r.Path, "/merge"):
			var in struct {
				SHA string `json:"sha"`
			}
			_ = json.Unmarshal([]byte(r.Body), &in)
			merged = in.SHA
		}
	}
	if updates != 1 || merged != out.Commit || !mover.wasAsked(merged) {
		t.Errorf("%d update-branch requests (want 1); merged %q (outcome %q), checks read for it: %v", updates, merged, out.Commit, mover.wasAsked(merged))
	}
}

// TestLandBaseMovedWithAConflict: the moved base no longer merges into the
// branch: reason conflict, nothing merged.
func TestLandBaseMovedWithAConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mover := &baseMover{e: e, path: "work.txt"}
	e.fake.SetCI(mover.ci)
	n := e.fake.NewIssue("alice", "conflict", "x", []string{"agent-ready"}, "")
	l := newLander(t, e, n, nil)
	tip := l.commit(t, "work.txt", "work\n")
	if out := l.land(tip); out.Reason != state.ReasonConflict || out.OK || out.Commit != tip {
		t.Fatalf("%+v\n%s", out, l.log)
	}
	if p := e.fake.Pulls(); len(p) != 1 || p[0].Merged {
		t.Errorf("pull request %+v", p)
	}
}

// TestLandMergedBySomeoneElse: a person merges the pull request while its
// checks run: the landing is done (OK), not failed.
func TestLandMergedBySomeoneElse(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.github(func(c *GitHubConfig) { c.Token = "alice-token" })
	var once sync.Once
	e.fake.SetCI(func(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
		once.Do(func() {
			if err := alice.Merge(context.Background(), 2, sha, "merge", "by hand"); err != nil {
				t.Errorf("alice's merge: %v", err)
			}
		})
		return []ghfake.CheckRun{{Name: "ci/test", Status: "in_progress"}}, nil
	})
	n := e.fake.NewIssue("alice", "merged by hand", "x", []string{"agent-ready"}, "")
	l := newLander(t, e, n, nil)
	tip := l.commit(t, "work.txt", "work\n")
	if out := l.land(tip); !out.OK || out.Commit != tip || !e.onMain("work.txt") {
		t.Fatalf("%+v\n%s", out, l.log)
	}
}

// TestLandWithoutAutoMerge: green checks without AUTO_MERGE hand the pull
// request to a human: Away, the review label on the issue and the pull
// request, one comment, the claim label off.
func TestLandWithoutAutoMerge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "for review", "x", []string{"agent-ready"}, "")
	l := newLander(t, e, n, func(c *Config) { c.AutoMerge = false })
	out := l.land(l.commit(t, "work.txt", "work\n"))
	if !out.Away || out.OK || out.Reason != "" {
		t.Fatalf("%+v\n%s", out, l.log)
	}
	l.drain()
	is := e.issue(n)
	pr, _ := e.fake.Issue(2)
	if !hasLabel(is, "user-merge-review") || !hasLabel(pr, "user-merge-review") || hasLabel(is, "agent-running") || is.State != "open" ||
		commentsWith(is, "Pull request #2 is ready for review") != 1 {
		t.Errorf("after the hand-over:\n%s\n%s", dump(e, n), dump(e, 2))
	}
	if p := e.fake.Pulls(); len(p) != 1 || p[0].Merged || p[0].Draft {
		t.Errorf("pull request %+v", p)
	}
	if s := l.q.Summary(); s.Count(Review) != 1 {
		t.Errorf("summary %+v", s)
	}
}

// TestLandStops: the landing ends without a merge when the pull request
// is closed (reason pull request), the issue is closed (Away, the claim
// label off), or the push is refused (reason push: never forced).
func TestLandStops(t *testing.T) {
	t.Parallel()
	pending := func(f func()) func(string) ([]ghfake.CheckRun, []ghfake.Status) {
		var once sync.Once
		return func(string) ([]ghfake.CheckRun, []ghfake.Status) {
			once.Do(f)
			return []ghfake.CheckRun{{Name: "ci/test", Status: "in_progress"}}, nil
		}
	}
	t.Run("pull request closed", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.fake.SetCI(pending(func() { e.fake.ClosePull(2) }))
		n := e.fake.NewIssue("alice", "x", "x", []string{"agent-ready"}, "")
		l := newLander(t, e, n, nil)
		if out := l.land(l.commit(t, "work.txt", "work\n")); out.Reason != state.ReasonPR || !strings.Contains(out.Detail, "closed without merging") {
			t.Fatalf("%+v\n%s", out, l.log)
		}
	})
	t.Run("issue closed", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		n := e.fake.NewIssue("alice", "x", "x", []string{"agent-ready"}, "")
		e.fake.SetCI(pending(func() { e.fake.CloseIssue(n, "not_planned", "alice") }))
		l := newLander(t, e, n, nil)
		if out := l.land(l.commit(t, "work.txt", "work\n")); !out.Away || out.OK {
			t.Fatalf("%+v\n%s", out, l.log)
		}
		l.drain()
		if is := e.issue(n); hasLabel(is, "agent-running") {
			t.Errorf("the claim label stayed:\n%s", dump(e, n))
		}
		if s := l.q.Summary(); s.Count(Dropped) != 1 {
			t.Errorf("summary %+v", s)
		}
	})
	t.Run("push refused", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		n := e.fake.NewIssue("alice", "x", "x", []string{"agent-ready"}, "")
		l := newLander(t, e, n, nil)
		tip := l.commit(t, "work.txt", "work\n")
		// Someone else's commit on the issue's branch, made in origin as
		// their push leaves it (two processes; a clone, a commit and a push
		// were 12, and origin's new ref made the lander's clone a real one).
		theirs := e.git(e.origin, "-c", "user.name=other", "-c", "user.email=other@example.com", "commit-tree", "-p", "main", "-m", "someone else's", "main^{tree}")
		e.git(e.origin, "update-ref", "refs/heads/"+Branch(n), theirs)
		if out := l.land(tip); out.Reason != state.ReasonPush || out.OK {
			t.Fatalf("%+v\n%s", out, l.log)
		}
		if p := e.fake.Pulls(); len(p) != 0 {
			t.Errorf("pull requests %+v", p)
		}
	})
}

// TestLandRefusesAnUngatedTip: a branch that is not at the tip the runner
// gated is not landed.
func TestLandRefusesAnUngatedTip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "x", "x", []string{"agent-ready"}, "")
	l := newLander(t, e, n, nil)
	gated := l.commit(t, "work.txt", "work\n")
	l.commit(t, "more.txt", "not gated\n")
	if out := l.land(gated); out.Reason != state.ReasonWorktree || out.OK {
		t.Fatalf("%+v\n%s", out, l.log)
	}
	if p := e.fake.Pulls(); len(p) != 0 {
		t.Errorf("pull requests %+v", p)
	}
}

// TestLandReviewBlockedThenPassed: with the loop's review gate on, a green
// pull request is handed back for review (labelled); a verdict marker
// posted by another account, even an admin, for exactly the tree under
// review never counts (TestReviewForgedVerdictsAreIgnored end to end): a
// forged PASS lands nothing, the tree is handed back; a verdict on a tree
// that has since moved is not recorded and the tree is handed back; the
// loop's BLOCKING verdict is recorded as the driver's own comment and ends
// the landing with reason review, the reviewed head and the findings;
// after a fix commit, a forged BLOCKING beside the loop's PASS does not
// stop it: the PASS is recorded and the landing merges. (The forged
// verdicts were TestLandForgedVerdictsAreIgnored's own landing until
// issue 23: one lander, claim and pull request for both.)
func TestLandReviewBlockedThenPassed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "blocked once", "make it so", []string{"agent-ready"}, "")
	l := reviewLander{newLander(t, e, n, nil)}
	tip := l.commit(t, "work.txt", "work\n")
	out := l.landWith(tip, nil)
	if !out.Review || out.Commit != tip {
		t.Fatalf("green: %+v, want it handed back for review\n%s", out, l.log)
	}
	pr := e.fake.Pulls()[0].Number
	if !hasLabel(e.issue(n), DefaultReviewLabel) || !hasLabel(e.issue(pr), DefaultReviewLabel) {
		t.Errorf("not labelled under review:\n%s", dump(e, n))
	}
	l.forge(t, pr, review.Pass)
	if len(ownMarkers(e.issue(pr), "alice")) != 1 {
		t.Fatalf("the forgery was not made:\n%s", dump(e, pr))
	}
	if out := l.landWith(tip, nil); !out.Review || out.OK || e.fake.Pulls()[0].Merged {
		t.Fatalf("a forged PASS: %+v, want it handed back for review, not merged\n%s", out, l.log)
	}
	stale := l.verdict(t, true, 1, false)
	stale.Fingerprint = "moved"
	if out := l.landWith(tip, stale); !out.Review || len(ownMarkers(e.issue(pr), "bot")) != 0 {
		t.Fatalf("a verdict on a moved tree: %+v, markers %+v", out, ownMarkers(e.issue(pr), "bot"))
	}
	out = l.landWith(tip, l.verdict(t, false, 1, false, "off by one in work"))
	if out.Reason != state.ReasonReview || out.Commit != tip || !slices.Equal(out.Checks, []string{"off by one in work"}) {
		t.Fatalf("BLOCKING: %+v\n%s", out, l.log)
	}
	if hasLabel(e.issue(n), DefaultReviewLabel) {
		t.Errorf("still labelled after the verdict")
	}
	fixed := l.commit(t, "fix.txt", "fixed\n")
	if out := l.landWith(fixed, nil); !out.Review || out.Commit != fixed {
		t.Fatalf("fixed: %+v\n%s", out, l.log)
	}
	l.forge(t, pr, review.Blocking, "forged finding")
	if out := l.landWith(fixed, l.verdict(t, true, 1, false)); !out.OK || out.Commit != fixed || !e.onMain("fix.txt") {
		t.Fatalf("PASS beside a forged BLOCKING: %+v\n%s", out, l.log)
	}
	ms := ownMarkers(e.issue(pr), "bot")
	if len(ms) != 2 || ms[0].Verdict != review.Blocking || ms[0].Head != tip || ms[1].Verdict != review.Pass || ms[1].Head != fixed {
		t.Errorf("verdicts %+v: want BLOCKING on the first head, then PASS on the fixed one", ms)
	}
}

// TestReleaseQueuesTheIssueAgain: an interrupted issue's claim is given
// up: one release comment closing our round, READY_LABEL back on,
// CLAIM_LABEL off, the heartbeat stopped.
func TestReleaseQueuesTheIssueAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "interrupted", "x", []string{"agent-ready"}, "")
	l := newLander(t, e, n, nil)
	l.q.Release(l.id, "interrupted")
	if l.heartbeat() {
		t.Errorf("the claim heartbeat still runs")
	}
	l.drain()
	is := e.issue(n)
	if !hasLabel(is, "agent-ready") || hasLabel(is, "agent-running") || commentsWith(is, "claudopilot:release instance="+l.q.Instance()) != 1 {
		t.Errorf("after Release:\n%s", dump(e, n))
	}
	if cs, _, err := l.q.claimState(context.Background(), n); err != nil || cs.Holder != "" {
		t.Errorf("claim state %+v, %v", cs, err)
	}
	if s := l.q.Summary(); s.Count(Interrupted) != 1 {
		t.Errorf("summary %+v", s)
	}
}
