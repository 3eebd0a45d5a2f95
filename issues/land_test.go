package issues

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/issues/ghfake"
)

// Tests of the queue's landing rule: the pull request is ready before its
// checks count, "no checks" is green only after CHECKS_GRACE, pending
// checks time out, and only a head that contains the current base is
// merged.

// fixer is a repair supervisor that makes e.ci() green.
const fixer = `set -e
test "$CLAUDOPILOT_FAILURE" = checks
echo fixed > FIXED
git add FIXED
git commit -qm "fix ci/test"
`

// readyBeforeChecks fails unless the pull request was marked ready before
// its checks were first read (the fake's request log).
func readyBeforeChecks(t *testing.T, e *env) {
	t.Helper()
	var ready, firstChecks time.Time
	for _, r := range e.fake.Requests() {
		switch {
		case r.Path == "/graphql" && strings.Contains(r.Body, "markPullRequestReadyForReview") && ready.IsZero():
			ready = r.At
		case strings.HasSuffix(r.Path, "/check-runs") && firstChecks.IsZero():
			firstChecks = r.At
		}
	}
	if ready.IsZero() || firstChecks.Before(ready) {
		t.Errorf("checks read at %v, before the pull request was marked ready at %v", firstChecks, ready)
	}
}

// TestDraftCIIsNotGreen: CI that skips drafts reports no checks on one.
// The pull request is marked ready first, so the real (red) checks are
// counted, repaired, and only then merged.
func TestDraftCIIsNotGreen(t *testing.T) {
	soakOnly(t, "TestLandDraftCIIsNotGreen (the pull request is ready before its checks are read, so the red checks are seen) and TestLandRedChecksThenRepaired (the repair lands)")
	t.Parallel()
	e := newEnv(t)
	e.fake.SetCI(e.ci())
	e.fake.SetCIRules(ghfake.CIRules{SkipDrafts: true})
	n := e.fake.NewIssue("alice", "draft CI", "x", []string{"agent-ready"}, "")
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) { c.Supervisor = e.script("fix.sh", fixer) })
	sum := run(t, q, log)
	if sum.Count(Merged) != 1 || !e.onMain("FIXED") {
		t.Fatalf("merged without its CI having passed: summary %+v, FIXED on main %v\n%s\n%s", sum, e.onMain("FIXED"), log, dump(e, n))
	}
	readyBeforeChecks(t, e)
}

// TestChecksGrace: checks appear a minute after the push; with the
// default CHECKS_GRACE of 120 s the red check is seen and repaired, and a
// repository without CI merges only 120 s after the pull request was
// ready.
func TestChecksGrace(t *testing.T) {
	soakOnly(t, "TestLandChecksGrace (late red checks seen; without CI the merge only CHECKS_GRACE after ready) and TestLandRedChecksThenRepaired (the repair lands)")
	t.Parallel()
	t.Run("late checks", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.fake.SetCI(e.ci())
		e.fake.SetCIRules(ghfake.CIRules{Delay: time.Minute})
		n := e.fake.NewIssue("alice", "late CI", "x", []string{"agent-ready"}, "")
		log := &syncBuf{}
		q := e.queue("w", log, func(c *Config) {
			c.Supervisor = e.script("fix.sh", fixer)
			c.ChecksGrace, c.CheckPoll = 0, 10*time.Second
		})
		sum := run(t, q, log)
		if sum.Count(Merged) != 1 || !e.onMain("FIXED") || !strings.Contains(log.String(), "landing: checks: failing checks: ci/test") {
			t.Fatalf("late red checks not seen: summary %+v\n%s\n%s", sum, log, dump(e, n))
		}
	})
	t.Run("no CI", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		n := e.fake.NewIssue("alice", "no CI", "x", []string{"agent-ready"}, "")
		log := &syncBuf{}
		q := e.queue("w", log, func(c *Config) { c.ChecksGrace, c.CheckPoll = 0, 10*time.Second })
		sum := run(t, q, log)
		if sum.Count(Merged) != 1 {
			t.Fatalf("summary %+v\n%s\n%s", sum, log, dump(e, n))
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
		if !strings.Contains(log.String(), "none counts as green after CHECKS_GRACE (2m0s)") {
			t.Errorf("no grace line:\n%s", log)
		}
	})
}

// TestPendingChecksTimeOut: checks still pending CHECKS_TIMEOUT after the
// push block the issue, with that reason.
func TestPendingChecksTimeOut(t *testing.T) {
	soakOnly(t, "TestLandChecksTimeoutThenBlocked (the outcome, the block comment, the pull request kept open) and scheduler.TestOutsideLandingRoutes/checks_pending (blocked, no repair)")
	t.Parallel()
	e := newEnv(t)
	e.fake.SetCI(func(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
		return []ghfake.CheckRun{{Name: "ci/slow", Status: "in_progress"}}, nil
	})
	n := e.fake.NewIssue("alice", "slow CI", "x", []string{"agent-ready"}, "")
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) { c.ChecksTimeout, c.CheckPoll = 10*time.Minute, time.Minute })
	sum := run(t, q, log)
	is := e.issue(n)
	if sum.Count(Blocked) != 1 || !hasLabel(is, "agent-blocked") || commentsWith(is, "still pending after CHECKS_TIMEOUT (10m0s): ci/slow") != 1 {
		t.Fatalf("summary %+v\n%s\n%s", sum, log, dump(e, n))
	}
	if p := e.fake.Pulls(); len(p) != 1 || p[0].Merged || p[0].State != "open" {
		t.Errorf("pull request %+v", p)
	}
}

// baseMover is a CI that passes every commit and, the first time it is
// asked, pushes a commit to main that writes path (the base moves while
// the checks run). It records the commits it was asked about.
type baseMover struct {
	e     *env
	path  string
	mu    sync.Mutex
	moved bool
	asked []string
}

func (b *baseMover) ci(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked = append(b.asked, sha)
	if !b.moved {
		b.moved = true
		dir := filepath.Join(b.e.dir, "mover")
		b.run("clone", "-q", b.e.origin, dir)
		writeFile(b.e.t, filepath.Join(dir, b.path), "from main\n")
		b.run("-C", dir, "add", "-A")
		b.run("-C", dir, "-c", "user.name=M", "-c", "user.email=m@example.com", "commit", "-qm", "main moves")
		b.run("-C", dir, "push", "-q", "origin", "HEAD:main")
	}
	return []ghfake.CheckRun{{Name: "ci/test", Status: "completed", Conclusion: "success"}}, nil
}

func (b *baseMover) run(args ...string) {
	cmd := exec.Command("git", args...)
	cmd.Env = b.e.genv
	if out, err := cmd.CombinedOutput(); err != nil {
		b.e.t.Errorf("git %v: %v\n%s", args, err, out)
	}
}

func (b *baseMover) wasAsked(sha string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, a := range b.asked {
		if a == sha {
			return true
		}
	}
	return false
}

// TestBaseMovedIsUpdatedBeforeMerge: the base moved after the checks ran,
// so the branch is brought up to date (update-branch with the head's sha
// expected), its new head's checks are waited for, and that head is what
// is merged.
func TestBaseMovedIsUpdatedBeforeMerge(t *testing.T) {
	soakOnly(t, "TestLandBaseMovedIsUpdatedBeforeMerge (update-branch with the head expected; the updated head, whose checks were read, is merged)")
	t.Parallel()
	e := newEnv(t)
	mover := &baseMover{e: e, path: "other.txt"}
	e.fake.SetCI(mover.ci)
	n := e.fake.NewIssue("alice", "moving base", "x", []string{"agent-ready"}, "")
	log := &syncBuf{}
	q := e.queue("w", log, nil)
	sum := run(t, q, log)
	if sum.Count(Merged) != 1 || !e.onMain("other.txt") || !e.onMain("work/issue-1.txt") {
		t.Fatalf("summary %+v\n%s\n%s", sum, log, dump(e, n))
	}
	var updates int
	var merged string
	for _, r := range e.fake.Requests() {
		switch {
		case r.Method == "PUT" && strings.HasSuffix(r.Path, "/update-branch"):
			updates++
			if !strings.Contains(r.Body, `"expected_head_sha"`) {
				t.Errorf("update-branch without expected_head_sha: %s", r.Body)
			}
		case r.Method == "PUT" && strings.HasSuffix(r.Path, "/merge"):
			var in struct {
				SHA string `json:"sha"`
			}
			_ = json.Unmarshal([]byte(r.Body), &in)
			merged = in.SHA
		}
	}
	if updates != 1 {
		t.Errorf("%d update-branch requests, want 1\n%s", updates, log)
	}
	if merged == "" || !mover.wasAsked(merged) {
		t.Errorf("merged %q, whose checks were never read", merged)
	}
	if err := exec.Command("git", "-C", e.origin, "cat-file", "-e", merged+":other.txt").Run(); err != nil {
		t.Errorf("the merged head %s does not contain the base's new commit", merged)
	}
}

// TestBaseMovedWithAConflictGoesToTheSupervisor: the base moved and no
// longer merges cleanly: update-branch answers 422, nothing is merged as
// it is, and the scheduler's supervisor gets the conflict (one supervisor
// policy for phases and issues), with the base merged into its worktree.
func TestBaseMovedWithAConflictGoesToTheSupervisor(t *testing.T) {
	soakOnly(t, "TestLandBaseMovedWithAConflict (reason conflict with the branch head, nothing merged) and scheduler.TestOutsideLandingRoutes/conflict (the supervisor repairs beyond that head)")
	t.Parallel()
	e := newEnv(t)
	mover := &baseMover{e: e, path: "work/issue-1.txt"}
	e.fake.SetCI(mover.ci)
	n := e.fake.NewIssue("alice", "conflict", "x", []string{"agent-ready"}, "")
	log := &syncBuf{}
	q := e.queue("w", log, nil)
	run(t, q, log)
	out := log.String()
	c, s := strings.Index(out, "#1: landing: conflict: main moved since the checks ran"), strings.Index(out, "#1: supervisor 1 started")
	if c < 0 || s < c {
		t.Fatalf("no supervisor after the conflict:\n%s\n%s", out, dump(e, n))
	}
	if m := strings.Index(out, "#1: merged pull request"); m >= 0 && m < s {
		t.Errorf("merged before the repair:\n%s", out)
	}
}

// TestCrossRepoDependencies: "owner/repo#N" and issue URLs are deps on
// issues of other repositories, read through the API: closed as completed
// is done; open or not planned waits; unknown (or unreadable) blocks. A
// ref to the queue's own repository is a plain "#N".
func TestCrossRepoDependencies(t *testing.T) {
	soakOnly(t, "TestPollCrossRepoDependencies (done, waiting, not planned, unknown and own-repository refs; offered once the other repository's issue is done)")
	t.Parallel()
	e := newEnv(t)
	e.fake.SetForeign("other/lib", 5, "open", "")
	e.fake.SetForeign("other/lib", 6, "closed", "completed")
	e.fake.SetForeign("other/lib", 8, "closed", "not_planned")
	waits := e.fake.NewIssue("alice", "waits", "Depends on other/lib#5", []string{"agent-ready"}, "")
	done := e.fake.NewIssue("alice", "dep done", "Blocked by https://github.com/other/lib/issues/6", []string{"agent-ready"}, "")
	unknown := e.fake.NewIssue("alice", "unknown", "Depends on other/lib#7", []string{"agent-ready"}, "")
	notPlanned := e.fake.NewIssue("alice", "not planned", "Depends on other/lib#8", []string{"agent-ready"}, "")
	own := e.fake.NewIssue("alice", "own repo", "Depends on acme/widgets#2", []string{"agent-ready"}, "")
	record := filepath.Join(e.dir, "record")
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) { c.Env = append(c.Env, "RECORD="+record) })
	sum := run(t, q, log)
	for _, n := range []int{done, own} {
		if is := e.issue(n); is.State != "closed" {
			t.Errorf("#%d not merged\n%s", n, dump(e, n))
		}
	}
	for n, want := range map[int]string{waits: "waits on other/lib#5 (open)", notPlanned: "waits on other/lib#8 (closed)"} {
		if is := e.issue(n); is.State != "open" || !hasLabel(is, "agent-ready") || len(is.Comments) != 0 {
			t.Errorf("#%d was touched\n%s", n, dump(e, n))
		}
		if !strings.Contains(log.String(), IssueID(n)+": "+want) {
			t.Errorf("no line %q:\n%s", want, log)
		}
	}
	if is := e.issue(unknown); !hasLabel(is, "agent-blocked") || commentsWith(is, `depends on unknown issue "other/lib#7"`) != 1 {
		t.Errorf("unknown dep not blocked:\n%s", dump(e, unknown))
	}
	if sum.Count(Merged) != 2 || sum.Count(Blocked) != 1 {
		t.Errorf("summary %+v", sum)
	}
	// The other repository's issue is done: the waiting one goes.
	e.fake.SetForeign("other/lib", 5, "closed", "completed")
	run(t, q, log)
	if is := e.issue(waits); is.State != "closed" {
		t.Errorf("#%d not worked after its dep closed\n%s\n%s", waits, dump(e, waits), log)
	}
}

// TestLandHeadMovedIsCheckedAgain: someone pushes to the branch just
// before the merge: the merge answers 409, the landing follows the new
// head, reads its checks and merges it (TestHeadMovedIsCheckedAgain end
// to end).
func TestLandHeadMovedIsCheckedAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "race", "x", []string{"agent-ready"}, "")
	pushed := false
	e.fake.OnMerge(func(pr int) {
		if pushed {
			return
		}
		pushed = true
		e.originCommit(Branch(n), "human.txt", "a human was here\n", "human")
	})
	l := newLander(t, e, n, nil)
	l.inWorktree = true // the landing follows the moved head into it
	tip := l.commit(t, "work.txt", "work\n")
	if out := l.land(tip); !out.OK || out.Commit == tip || !e.onMain("human.txt") || !e.onMain("work.txt") {
		t.Fatalf("%+v\n%s", out, l.log)
	}
	if !strings.Contains(l.log.String(), "the head moved to") {
		t.Errorf("no 409 in the log:\n%s", l.log)
	}
}

// TestLandUnreadableChecksAreNeverGreen: checks that cannot be read (500s)
// are waited for, never taken for "no checks": the merge comes only after
// the failed reads and two empty ones (TestUnreadableChecksAreNeverGreen
// end to end).
func TestLandUnreadableChecksAreNeverGreen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "checks down", "x", []string{"agent-ready"}, "")
	e.fake.AddFault(ghfake.Fault{Method: "GET", Path: "/check-runs", Times: 6, Status: 500})
	l := newLander(t, e, n, func(c *Config) { c.GitHub = e.github(func(g *GitHubConfig) { g.MaxRetries = 1 }) })
	if out := l.land(l.commit(t, "work.txt", "work\n")); !out.OK || e.fake.FaultsServed() != 6 {
		t.Fatalf("%+v, faults %d\n%s", out, e.fake.FaultsServed(), l.log)
	}
	if !strings.Contains(l.log.String(), "cannot be read") {
		t.Errorf("no wait line:\n%s", l.log)
	}
	var merges, reads int
	for _, r := range e.fake.Requests() {
		switch {
		case strings.HasSuffix(r.Path, "/check-runs"):
			reads++
		case strings.HasSuffix(r.Path, "/merge") && merges == 0:
			merges++
			if reads < 8 {
				t.Errorf("merged after %d check reads (6 failed, then 2 empty needed)", reads)
			}
		}
	}
}

// TestLandVanishedIssueIsDropped: the issue is deleted while its checks
// run: the landing ends Away, the issue is dropped, never blocked
// (TestVanishedIssueIsDropped end to end).
func TestLandVanishedIssueIsDropped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "will vanish", "x", []string{"agent-ready"}, "")
	var once sync.Once
	e.fake.SetCI(func(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
		once.Do(func() { e.fake.DeleteIssue(n) })
		return []ghfake.CheckRun{{Name: "slow", Status: "in_progress"}}, nil
	})
	l := newLander(t, e, n, nil)
	if out := l.land(l.commit(t, "work.txt", "work\n")); !out.Away || out.OK || out.Reason != "" {
		t.Fatalf("%+v\n%s", out, l.log)
	}
	l.drain()
	if s := l.q.Summary(); s.Count(Dropped) != 1 || s.Count(Blocked) != 0 {
		t.Errorf("summary %+v", s)
	}
	if is := e.issue(n); commentsWith(is, "could not finish") != 0 || hasLabel(is, "agent-blocked") {
		t.Errorf("a vanished issue was blocked:\n%s", dump(e, n))
	}
}
