package issues

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/issues/ghfake"
)

// Tests of GitHub's real answers, which the fake was taught first: app
// installation tokens, merge races, lost answers, a head GitHub does not
// know yet, and Retry-After with any documentation URL.

const appToken = "app-installation-token-7d1e9c"

// TestAppTokensNeverWorkAnIssueTwice: with an app installation token GET
// /user answers 403 and the app's login "name[bot]" has no collaborator
// permission (404). Two instances sharing such a token must still see each
// other's claims. Without GraphQL's viewer, each learns its login from its
// own claim comment.
// Two full queue runs of two instances each (6 s of CPU): under
// CLAUDOPILOT_SOAK=1 only; TestAppTokenInstancesSeeEachOthersClaims
// proves the property at the claim, without a run.
func TestAppTokensNeverWorkAnIssueTwice(t *testing.T) {
	t.Parallel()
	if !soak() {
		t.Skip("two queue runs of two instances: CLAUDOPILOT_SOAK=1 only; TestAppTokenInstancesSeeEachOthersClaims proves that instances sharing an app token never both hold an issue, with and without GraphQL's viewer")
	}
	for _, tc := range []struct {
		name     string
		noViewer bool
	}{{"viewer", false}, {"learned from the claim comment", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			bot := e.fake.AddAppToken(appToken, "claudopilot")
			if tc.noViewer {
				e.fake.RefuseViewer()
			}
			// Three issues: an instance runs two agents at most, so the
			// other one claims at least one (four under CLAUDOPILOT_SOAK=1).
			var nums []int
			issues := 3
			if soak() {
				issues = 4
			}
			for i := 1; i <= issues; i++ {
				nums = append(nums, e.fake.NewIssue("alice", "task", "do it", []string{"agent-ready"}, ""))
			}
			record := filepath.Join(e.dir, "record")
			// Each instance must claim at least one issue: the other learns
			// no login (Self) from a claim it never posts. An instance runs
			// at most MaxParallel (2) agents, so the agents wait until 3 have
			// started: the third is the other instance's, however late it
			// starts (seen: one instance worked all four under load). The
			// bound only keeps a broken queue from hanging the test.
			starts := filepath.Join(e.dir, "starts")
			slow := e.script("slow.sh", `echo "$CLAUDOPILOT_PHASE" >>"$STARTS"
i=0
while [ "$(wc -l <"$STARTS")" -lt 3 ] && [ $i -lt 1200 ]; do
	i=$((i + 1))
	sleep 0.05
done
`+okAgent)
			logs := []*syncBuf{{}, {}}
			qs := make([]*Queue, 2)
			for i := range qs {
				qs[i] = e.queue([]string{"one", "two"}[i], logs[i], func(c *Config) {
					c.GitHub = e.github(func(g *GitHubConfig) { g.Token = appToken })
					c.Token = appToken
					c.Agent = slow // two at once (the harness's MAX_PARALLEL)
					c.Env = append(c.Env, "RECORD="+record, "STARTS="+starts)
				})
			}
			var wg sync.WaitGroup
			sums := make([]Summary, 2)
			for i := range qs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sums[i] = run(t, qs[i], logs[i])
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
				is := e.issue(n)
				if is.State != "closed" || hasLabel(is, "agent-blocked") {
					t.Errorf("#%d not merged cleanly\n%s", n, dump(e, n))
				}
			}
			if got := sums[0].Count(Merged) + sums[1].Count(Merged); got != len(nums) {
				t.Errorf("%d merges, want %d\none:\n%s\ntwo:\n%s", got, len(nums), logs[0], logs[1])
			}
			for i, q := range qs {
				if q.gh.Self() != bot {
					t.Errorf("instance %d thinks it is %q, want %q", i, q.gh.Self(), bot)
				}
			}
		})
	}
}

// TestAppTokenInstancesSeeEachOthersClaims is TestAppTokensNeverWorkAnIssueTwice
// at the claim, without a run: two instances sharing an app token (GET
// /user 403, "name[bot]" without a collaborator permission) race for each
// of two issues. The loser read the issue ready, and the winner claimed
// it before the loser's own claim comment: the loser must see the
// winner's comment as a claim of its own login and back off. Without
// GraphQL's viewer neither instance knows its login before it posts; it
// learns it (Self) from its own claim comment, and only then trusts the
// other's.
func TestAppTokenInstancesSeeEachOthersClaims(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		noViewer bool
	}{{"viewer", false}, {"learned from the claim comment", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			bot := e.fake.AddAppToken(appToken, "claudopilot")
			if tc.noViewer {
				e.fake.RefuseViewer()
			}
			nums := []int{
				e.fake.NewIssue("alice", "one's", "do it", []string{"agent-ready"}, ""),
				e.fake.NewIssue("alice", "two's", "do it", []string{"agent-ready"}, ""),
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a bound, not a wait
			defer cancel()
			qs := make([]*Queue, 2)
			races := make([]*raceAfter, 2)
			for i := range qs {
				races[i] = &raceAfter{next: http.DefaultTransport}
				qs[i] = e.queue([]string{"one", "two"}[i], &syncBuf{}, func(c *Config) {
					c.GitHub = e.github(func(g *GitHubConfig) {
						g.Token = appToken
						g.HTTPClient = &http.Client{Transport: races[i], Timeout: testTimeout}
					})
					c.Token = appToken
				})
				if err := qs[i].Start(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if !tc.noViewer && (qs[0].gh.Self() != bot || qs[1].gh.Self() != bot) {
				t.Errorf("after Start the instances are %q and %q, want %q (GraphQL's viewer)", qs[0].gh.Self(), qs[1].gh.Self(), bot)
			}
			// Issue nums[w] is won by instance w: the other (the loser)
			// claims it, and right after the loser read it ready, w claims.
			for w, n := range nums {
				winner, loser := qs[w], qs[1-w]
				var won bool
				var why string
				var err error
				races[1-w].arm("GET", fmt.Sprintf("/repos/%s/%s/issues/%d", owner, repo, n), func() {
					won, _, why, err = winner.claim(ctx, n)
				})
				lost, _, lwhy, lerr := loser.claim(ctx, n)
				if err != nil || !won || !races[1-w].fired() {
					t.Fatalf("the winner's claim of #%d: won %v (%s), %v; raced %v\n%s", n, won, why, err, races[1-w].fired(), dump(e, n))
				}
				if lerr != nil || lost || !strings.Contains(lwhy, "claimed first by "+winner.Instance()) {
					t.Fatalf("the loser's claim of #%d: won %v (%q), %v; want it to back off from the earlier claim of %s\n%s", n, lost, lwhy, lerr, winner.Instance(), dump(e, n))
				}
				for i, q := range qs {
					if st, _, err := q.claimState(ctx, n); err != nil || st.Holder != winner.Instance() {
						t.Errorf("#%d as instance %d reads it: held by %q (%v), want %q", n, i, st.Holder, err, winner.Instance())
					}
				}
			}
			for i, q := range qs {
				if q.gh.Self() != bot {
					t.Errorf("instance %d thinks it is %q, want %q", i, q.gh.Self(), bot)
				}
			}
		})
	}
}

// raceAfter is a transport that, once armed, runs its hook after the
// answer to the first request of its method and path, before the client
// reads it: another instance acting between two of this one's requests.
type raceAfter struct {
	next         http.RoundTripper
	mu           sync.Mutex
	method, path string
	hook         func()
	ran          bool
}

func (r *raceAfter) arm(method, path string, hook func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.method, r.path, r.hook, r.ran = method, path, hook, false
}

func (r *raceAfter) fired() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ran
}

func (r *raceAfter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	r.mu.Lock()
	hook := r.hook
	if hook != nil && req.Method == r.method && req.URL.Path == r.path {
		r.hook, r.ran = nil, true
	} else {
		hook = nil
	}
	r.mu.Unlock()
	if hook != nil {
		hook()
	}
	return resp, err
}

// TestAppTokenTrustsItsOwnRequeue: an issue put back in the queue by the
// driver itself (READY_LABEL applied by "name[bot]", whose permission
// GitHub cannot tell) is still trusted.
func TestAppTokenTrustsItsOwnRequeue(t *testing.T) {
	t.Parallel()
	if !soak() {
		t.Skip("a queue run: CLAUDOPILOT_SOAK=1 only; TestAppTokenRequeueIsTrusted proves the queue trusts READY_LABEL applied by its own app login (and still refuses it on an issue it filed)")
	}
	e := newEnv(t)
	bot := e.fake.AddAppToken(appToken, "claudopilot")
	n := e.fake.NewIssue("alice", "requeued", "x", []string{"agent-ready"}, bot)
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) {
		c.GitHub = e.github(func(g *GitHubConfig) { g.Token = appToken })
		c.Token = appToken
	})
	if sum := run(t, q, log); sum.Count(Merged) != 1 {
		t.Fatalf("summary %+v\n%s\n%s", sum, log, dump(e, n))
	}
}

// TestAppTokenRequeueIsTrusted is TestAppTokenTrustsItsOwnRequeue at the
// queue's trust check, without a run: READY_LABEL applied by the app's own
// login "name[bot]" (which has no collaborator permission GitHub can tell)
// on a maintainer's issue is trusted; on an issue the driver filed itself
// (a scanner's proposal) it is not: a maintainer must add it.
func TestAppTokenRequeueIsTrusted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bot := e.fake.AddAppToken(appToken, "claudopilot")
	requeued := e.fake.NewIssue("alice", "requeued", "x", []string{"agent-ready"}, bot)
	own := e.fake.NewIssue(bot, "a proposal", "x", []string{"agent-ready"}, bot)
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) {
		c.GitHub = e.github(func(g *GitHubConfig) { g.Token = appToken })
		c.Token = appToken
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a bound, not a wait
	defer cancel()
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]bool{requeued: true, own: false} {
		is, err := q.gh.Issue(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		ok, why, err := q.trusted(ctx, is)
		if err != nil || ok != want {
			t.Errorf("#%d by %s, labelled by %s: trusted %v (%s), %v; want %v", n, is.Author, bot, ok, why, err, want)
		}
		if !want && !strings.Contains(why, "the driver's own account") {
			t.Errorf("#%d: refused because %q", n, why)
		}
	}
}

// TestMergeRaceIsRetried: 405 "Base branch was modified" is what GitHub
// answers the loser of two racing merges; the pull request is read again
// and the merge tried again.
func TestMergeRaceIsRetried(t *testing.T) {
	t.Parallel()
	if !soak() {
		t.Skip("a queue run: CLAUDOPILOT_SOAK=1 only; TestMergeAnswersAtTheClient/race proves that a 405 base-modified merge is read again and retried, and merged")
	}
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "race", "x", []string{"agent-ready"}, "")
	e.fake.AddFault(ghfake.Fault{Method: "PUT", Path: "/merge", Times: 2, Status: 405, Message: ghfake.MsgBaseModified})
	log := &syncBuf{}
	q := e.queue("w", log, nil)
	if sum := run(t, q, log); sum.Count(Merged) != 1 {
		t.Fatalf("summary %+v\n%s\n%s", sum, log, dump(e, n))
	}
	if e.fake.FaultsServed() != 2 || !e.onMain("work/issue-1.txt") {
		t.Errorf("faults %d, on main %v", e.fake.FaultsServed(), e.onMain("work/issue-1.txt"))
	}
}

// TestLostMergeAnswerIsMerged: GitHub merged, but the answer was lost (a
// 502 from a proxy, or none at all: a timeout or a dropped connection). A retry would get 405; the pull request
// is read before it, and merged means done.
func TestLostMergeAnswerIsMerged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault ghfake.Fault
	}{
		{"502", ghfake.Fault{Method: "PUT", Path: "/merge", Lost: true, Status: 502}},
		{"no answer", ghfake.Fault{Method: "PUT", Path: "/merge", Drop: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if !soak() {
				t.Skip("a queue run: CLAUDOPILOT_SOAK=1 only; TestMergeAnswersAtTheClient/" + tc.name + " proves that a merge whose answer was lost is read before a retry, sent once, and done")
			}
			e := newEnv(t)
			n := e.fake.NewIssue("alice", "lost", "x", []string{"agent-ready"}, "")
			e.fake.AddFault(tc.fault)
			log := &syncBuf{}
			q := e.queue("w", log, nil)
			sum := run(t, q, log)
			is := e.issue(n)
			if sum.Count(Merged) != 1 || hasLabel(is, "agent-blocked") || is.State != "closed" {
				t.Fatalf("summary %+v\n%s\n%s", sum, log, dump(e, n))
			}
			merges := countRequests(e.fake.Requests(), "PUT", "/merge")
			if merges != 1 {
				t.Errorf("%d merge requests, want 1 (the retry must read the pull request first)", merges)
			}
		})
	}
}

// TestMergeAnswersAtTheClient is TestMergeRaceIsRetried and
// TestLostMergeAnswerIsMerged without a queue run (the queue lands through
// GitHub.Merge; an error from it blocks the issue): a 405 "Base branch was
// modified" (the loser of two racing merges) is read again and retried;
// a merge whose answer was lost (a 502 from a proxy, or a dropped
// connection) is read before any retry, so it is sent once, and merged is
// done. One origin, a pull request per case.
func TestMergeAnswersAtTheClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.github(nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		fault  ghfake.Fault
		merges int // PUT .../merge requests, the faulty ones too
	}{
		{"race", ghfake.Fault{Method: "PUT", Path: "/merge", Times: 2, Status: 405, Message: ghfake.MsgBaseModified}, 3},
		{"502", ghfake.Fault{Method: "PUT", Path: "/merge", Lost: true, Status: 502}, 1},
		{"no answer", ghfake.Fault{Method: "PUT", Path: "/merge", Drop: true}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			branch := "b-" + strings.ReplaceAll(tc.name, " ", "-")
			e.originCommit(branch, branch+".txt", branch+"\n", branch)
			p, err := g.CreatePR(ctx, branch, "main", branch, "body", false)
			if err != nil {
				t.Fatal(err)
			}
			before, served := len(e.fake.Requests()), e.fake.FaultsServed()
			e.fake.AddFault(tc.fault)
			if err := g.Merge(ctx, p.Number, p.HeadSHA, "merge", "t"); err != nil {
				t.Fatalf("Merge: %v", err)
			}
			merges := countRequests(e.fake.Requests()[before:], "PUT", "/merge")
			if merges != tc.merges || e.fake.FaultsServed()-served != max(tc.fault.Times, 1) || !e.onMain(branch+".txt") {
				t.Errorf("%d merge requests (want %d: a lost merge is read before a retry), %d faults served, on main %v",
					merges, tc.merges, e.fake.FaultsServed()-served, e.onMain(branch+".txt"))
			}
		})
	}
}

// TestLostWritesAreCheckedFirst: marking ready and updating a branch whose
// answers were lost are not sent again.
func TestLostWritesAreCheckedFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.github(nil)
	ctx := context.Background()
	e.originCommit("feature", "f.txt", "f\n", "f")
	p, err := g.CreatePR(ctx, "feature", "main", "f", "body", true)
	if err != nil {
		t.Fatal(err)
	}
	e.fake.AddFault(ghfake.Fault{Method: "POST", Path: "/graphql", Lost: true, Status: 502})
	if err := g.MarkReady(ctx, p); err != nil || p.Draft {
		t.Fatalf("MarkReady after a lost answer: %v (draft %v)", err, p.Draft)
	}
	// The base moves; the update's answer is lost.
	e.originCommit("main", "g.txt", "g\n", "g")
	if behind, err := g.BehindBase(ctx, "main", p.HeadSHA); err != nil || behind != 1 {
		t.Fatalf("BehindBase = %d, %v; want 1", behind, err)
	}
	e.fake.AddFault(ghfake.Fault{Method: "PUT", Path: "/update-branch", Lost: true, Status: 502})
	head, err := g.UpdateBranch(ctx, p.Number, p.HeadSHA)
	if err != nil || head == p.HeadSHA {
		t.Fatalf("UpdateBranch after a lost answer: %q, %v", head, err)
	}
	if behind, err := g.BehindBase(ctx, "main", head); err != nil || behind != 0 {
		t.Errorf("after the update BehindBase = %d, %v", behind, err)
	}
	counts := map[string]int{}
	for _, r := range e.fake.Requests() {
		if r.Method != "GET" {
			counts[r.Method+" "+r.Path[strings.LastIndex(r.Path, "/"):]]++
		}
	}
	if counts["POST /graphql"] != 1 || counts["PUT /update-branch"] != 1 {
		t.Errorf("writes %v: a lost write was sent again", counts)
	}
	// An update with a stale head is ErrHeadMoved.
	if _, err := g.UpdateBranch(ctx, p.Number, p.HeadSHA); !errors.Is(err, ErrHeadMoved) {
		t.Errorf("stale update: %v", err)
	}
}

// TestPRHeadNotYetKnown: right after a push GitHub may answer 422 head
// invalid until it has processed the push; the create is tried again with
// backoff for up to 30 s (on the injected clock), then given up.
func TestPRHeadNotYetKnown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.github(nil)
	ctx := context.Background()
	for _, b := range []string{"fresh", "never"} {
		e.originCommit(b, b+".txt", b+"\n", b)
	}
	e.fake.AddFault(ghfake.Fault{Method: "POST", Path: "/pulls", Times: 3, Status: 422, Body: ghfake.HeadInvalid})
	before := len(e.clock.Slept())
	p, err := g.CreatePR(ctx, "fresh", "main", "t", "b", true)
	if err != nil || p == nil {
		t.Fatalf("CreatePR after three 422s: %v", err)
	}
	if s := e.clock.Slept()[before:]; len(s) != 3 {
		t.Errorf("waits %v, want 3", s)
	}
	e.fake.AddFault(ghfake.Fault{Method: "POST", Path: "/pulls", Times: -1, Status: 422, Body: ghfake.HeadInvalid})
	before = len(e.clock.Slept())
	if _, err := g.CreatePR(ctx, "never", "main", "t", "b", true); err == nil || statusOf(err) != 422 {
		t.Fatalf("CreatePR with a head GitHub never knows: %v", err)
	}
	var total time.Duration
	for _, d := range e.clock.Slept()[before:] {
		total += d
	}
	if total != 30*time.Second {
		t.Errorf("waited %s in all, want 30s", total)
	}
}

// TestRetryAfterIsARateLimit: a 403 or 429 with Retry-After waits that
// long, whatever documentation URL it names.
func TestRetryAfterIsARateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.github(nil)
	ctx := context.Background()
	n := e.fake.NewIssue("alice", "x", "y", nil, "")
	for _, f := range []ghfake.Fault{
		{Method: "GET", Path: "/issues/1", Status: 403, RetryAfter: 42 * time.Second, Message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", DocURL: "https://docs.github.com/free-pro-team@latest/rest/overview/resources-in-the-rest-api#rate-limiting"},
		{Method: "GET", Path: "/issues/1", Status: 429, RetryAfter: 17 * time.Second, Message: "too many requests", DocURL: "https://docs.github.com/rest"},
	} {
		before := len(e.clock.Slept())
		e.fake.AddFault(f)
		if _, err := g.Issue(ctx, n); err != nil {
			t.Fatalf("after %d with Retry-After: %v", f.Status, err)
		}
		if s := e.clock.Slept()[before:]; len(s) != 1 || s[0] != f.RetryAfter {
			t.Errorf("%d waits %v, want %s", f.Status, s, f.RetryAfter)
		}
	}
	// A 403 without Retry-After is no rate limit: it fails at once.
	e.fake.AddFault(ghfake.Fault{Method: "GET", Path: "/issues/1", Status: 403, Message: "Must have admin rights to Repository."})
	if _, err := g.Issue(ctx, n); statusOf(err) != 403 {
		t.Errorf("a plain 403: %v", err)
	}
}

// TestMergeGivenUpButMerged: GitHub merged, then every answer failed until
// the client gave up; the pull request is read once more, and merged is
// done.
func TestMergeGivenUpButMerged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.github(func(c *GitHubConfig) { c.MaxRetries = 2 })
	ctx := context.Background()
	e.originCommit("feature", "f.txt", "f\n", "f")
	p, err := g.CreatePR(ctx, "feature", "main", "f", "body", false)
	if err != nil {
		t.Fatal(err)
	}
	e.fake.AddFault(ghfake.Fault{Method: "PUT", Path: "/merge", Lost: true, Status: 502})
	// The reads before the retries fail too, so the client gives up.
	e.fake.AddFault(ghfake.Fault{Method: "GET", Path: "/pulls/1$", Times: 6, Status: 502})
	e.fake.AddFault(ghfake.Fault{Method: "PUT", Path: "/merge", Times: -1, Status: 502})
	if err := g.Merge(ctx, p.Number, p.HeadSHA, "merge", "t"); err != nil {
		t.Fatalf("Merge of a pull request GitHub merged: %v", err)
	}
	if !e.onMain("f.txt") {
		t.Error("not merged")
	}
}

// TestSecondaryLimitWithoutRetryAfter: GitHub answers a secondary rate
// limit with 403 "You have exceeded a secondary rate limit",
// X-RateLimit-Remaining well above 0, a reset up to an hour ahead and no
// Retry-After. Its rate-limit docs: use the reset only when remaining is
// 0; otherwise wait at least a minute, then back off exponentially.
// go-github's fallback takes the reset header: an hour's wait per call.
func TestSecondaryLimitWithoutRetryAfter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.github(nil)
	ctx := context.Background()
	n := e.fake.NewIssue("alice", "x", "y", nil, "")
	if _, err := g.Issue(ctx, n); err != nil { // opens the token's hour
		t.Fatal(err)
	}
	// The fake answers as GitHub does: no Retry-After, remaining > 0, the
	// reset about an hour ahead.
	e.fake.AddFault(ghfake.Fault{Method: "GET", Path: "/issues/1$", Secondary: true})
	req, _ := http.NewRequest("GET", e.fake.URL()+"repos/acme/widgets/issues/1", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	reset, _ := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64)
	if resp.StatusCode != 403 || resp.Header.Get("Retry-After") != "" || resp.Header.Get("X-RateLimit-Remaining") == "0" ||
		time.Unix(reset, 0).Sub(e.clock.Now()) < 50*time.Minute {
		t.Fatalf("the fake's secondary limit: %d %v", resp.StatusCode, resp.Header)
	}

	before := len(e.clock.Slept())
	e.fake.AddFault(ghfake.Fault{Method: "GET", Path: "/issues/1$", Secondary: true, Times: 3})
	if _, err := g.Issue(ctx, n); err != nil {
		t.Fatalf("after three secondary limits: %v", err)
	}
	if s := e.clock.Slept()[before:]; !reflect.DeepEqual(s, []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute}) {
		t.Errorf("secondary limits without Retry-After waited %v, want 1m 2m 4m", s)
	}
	// Remaining 0: the primary limit, whose reset is the time to wait.
	before = len(e.clock.Slept())
	e.fake.AddFault(ghfake.Fault{Method: "GET", Path: "/issues/1$", RateLimit: true, Reset: 30 * time.Minute})
	if _, err := g.Issue(ctx, n); err != nil {
		t.Fatalf("after a primary limit: %v", err)
	}
	if s := e.clock.Slept()[before:]; len(s) != 1 || s[0] < 29*time.Minute || s[0] > 31*time.Minute {
		t.Errorf("the primary limit waited %v, want ~30m (its reset)", s)
	}
	// A 403 that is no limit is a refusal, at once.
	before = len(e.clock.Slept())
	e.fake.AddFault(ghfake.Fault{Method: "GET", Path: "/issues/1$", Status: 403, Message: "Must have admin rights to Repository."})
	if _, err := g.Issue(ctx, n); err == nil || len(e.clock.Slept()) != before {
		t.Errorf("a plain 403: %v, waits %v", err, e.clock.Slept()[before:])
	}
}
