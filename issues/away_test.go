package issues

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/issues/ghfake"
)

// TestAwayMidRun (issue 24 §3): an issue that goes away while its agent
// runs (closed as not planned, transferred to a repository the token
// cannot read, transferred where it can (301), or taken out of the queue
// by a maintainer) is read at each poll: its agent is stopped, no branch
// is pushed and no pull request opened, the issue is away (dropped) with
// why, and its worktree and branch are kept locally. Before, the agent
// ran to its end and the driver pushed and opened a pull request.
func TestAwayMidRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, why string
		act       func(e *env, n int)
	}{
		{"closed", "it was closed (not planned)", func(e *env, n int) { e.fake.CloseIssue(n, "not_planned", "alice") }},
		{"transferred unreadable", "GitHub answers 404", func(e *env, n int) { e.fake.TransferIssue(n, "acme/private", false) }},
		{"transferred", "GitHub answers 301", func(e *env, n int) { e.fake.TransferIssue(n, "acme/other", true) }},
		{"unreadied", "taken out of the queue", func(e *env, n int) { e.fake.UnlabelIssue(n, "agent-running", "alice") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.name != "closed" && !soak() {
				t.Skip("a queue run per way of going away: CLAUDOPILOT_SOAK=1 only; TestAwayMidRun/closed stops an agent by default, and TestAwayIsReadOfEachKind/" + tc.name + " proves this way is read as away, with why, and dropped")
			}
			e := newEnv(t)
			n := e.fake.NewIssue("alice", "goes away", "work", []string{"agent-ready"}, "")
			started := filepath.Join(e.dir, "started")
			// One sleep until the driver stops it (a loop of short
			// sleeps was a process every 50 ms until then); not
			// stopped within the bound, it finishes and the test fails.
			agent := e.script("long.sh", `touch "`+started+`"
sleep 60
`+okAgent)
			log := &syncBuf{}
			q := e.queue("w", log, func(c *Config) { c.Agent = agent })
			done := make(chan Summary, 1)
			go func() { done <- run(t, q, log) }()
			waitFile(t, started, log)
			tc.act(e, n)
			sum := <-done
			if sum.Count(Dropped) != 1 || sum.Count(Merged) != 0 {
				t.Fatalf("summary %+v\n%s", sum, log)
			}
			if !strings.Contains(sum.Results[0].Reason, tc.why) {
				t.Errorf("dropped because %q, want %q", sum.Results[0].Reason, tc.why)
			}
			if len(e.fake.Pulls()) != 0 {
				t.Errorf("a pull request was opened: %+v", e.fake.Pulls())
			}
			cmd := exec.Command("git", "-C", e.origin, "rev-parse", "--verify", "-q", "refs/heads/"+Branch(n))
			cmd.Env = e.genv
			if cmd.Run() == nil {
				t.Errorf("the branch was pushed\n%s", log)
			}
			if _, err := os.Stat(q.WorktreePath(n)); err != nil {
				t.Errorf("the worktree is gone: %v", err)
			}
			if !strings.Contains(log.String(), "went away while worked on") {
				t.Errorf("log:\n%s", log)
			}
		})
	}
}

// TestAwayIsReadOfEachKind is TestAwayMidRun without a run, for each way
// an issue goes away: a claimed issue, read as the run's poll reads the
// issues it holds (Source.checkHeld: goneWhy of the read's error, else
// goneState), is away with why; going away drops it (Queue.goneAway): one
// Dropped result with that reason, the log line, and where the issue can
// still be written, the claim label off and a comment saying why. That a
// run then stops the agent and pushes nothing is TestAwayMidRun/closed.
func TestAwayIsReadOfEachKind(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	log := &syncBuf{}
	q := e.queue("w", log, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a bound, not a wait
	defer cancel()
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	bctx, stop := context.WithCancel(ctx)
	booked := q.Bookkeep(bctx)
	kinds := []struct {
		name, why string
		writable  bool // the issue is still here to be written
		act       func(n int)
	}{
		{"closed", "it was closed (not planned)", true, func(n int) { e.fake.CloseIssue(n, "not_planned", "alice") }},
		{"transferred unreadable", "GitHub answers 404", false, func(n int) { e.fake.TransferIssue(n, "acme/private", false) }},
		{"transferred", "GitHub answers 301", false, func(n int) { e.fake.TransferIssue(n, "acme/other", true) }},
		{"unreadied", "taken out of the queue", true, func(n int) { e.fake.UnlabelIssue(n, "agent-running", "alice") }},
	}
	nums := make([]int, len(kinds))
	for i, k := range kinds {
		nums[i] = e.fake.NewIssue("alice", "goes away: "+k.name, "work", []string{"agent-ready"}, "")
		if won, _, why, err := q.claim(ctx, nums[i]); err != nil || !won {
			t.Fatalf("claim #%d: %v %s", nums[i], err, why)
		}
		k.act(nums[i])
		why := ""
		if is, err := q.gh.Issue(ctx, nums[i]); err != nil {
			why = goneWhy(err)
		} else {
			why = q.goneState(is)
		}
		if !strings.Contains(why, k.why) {
			t.Errorf("%s: read as away because %q, want %q", k.name, why, k.why)
			continue
		}
		q.goneAway(nums[i], why)
	}
	stop()
	<-booked
	sum := q.Summary()
	if sum.Count(Dropped) != len(kinds) || len(sum.Results) != len(kinds) {
		t.Fatalf("summary %+v\n%s", sum, log)
	}
	for i, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			if r := sum.Results[i]; r.Number != nums[i] || !strings.Contains(r.Reason, k.why) {
				t.Errorf("result %+v, want #%d dropped because %q", r, nums[i], k.why)
			}
			if !strings.Contains(log.String(), IssueID(nums[i])+": went away while worked on: ") {
				t.Errorf("log:\n%s", log)
			}
			if is := e.issue(nums[i]); k.writable && (hasLabel(is, "agent-running") || commentsWith(is, "claudopilot stopped working on this issue: ") != 1) {
				t.Errorf("after going away:\n%s", dump(e, nums[i]))
			}
		})
	}
}

// TestAwayWithOpenPullRequest: an issue closed while its pull request's
// checks are read: the pull request is closed with a comment saying why.
// Before, the issue was dropped and the pull request left open.
func TestAwayWithOpenPullRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "closed during checks", "work", []string{"agent-ready"}, "")
	pending := make(chan struct{}, 1)
	e.fake.SetCI(func(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
		select {
		case pending <- struct{}{}:
		default:
		}
		return []ghfake.CheckRun{{Name: "ci", Status: "in_progress"}}, nil
	})
	log := &syncBuf{}
	q := e.queue("w", log, nil)
	done := make(chan Summary, 1)
	go func() { done <- run(t, q, log) }()
	select {
	case <-pending:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the checks were never read\n%s", log)
	}
	e.fake.CloseIssue(n, "not_planned", "alice")
	sum := <-done
	if sum.Count(Dropped) != 1 {
		t.Fatalf("summary %+v\n%s", sum, log)
	}
	ps := e.fake.Pulls()
	if len(ps) != 1 || ps[0].State != "closed" || ps[0].Merged {
		t.Fatalf("pull requests %+v", ps)
	}
	if c := commentsWith(e.issue(ps[0].Number), "went away while it was worked on (it was closed (not planned))"); c != 1 {
		t.Errorf("the pull request's comments:\n%s", dump(e, ps[0].Number))
	}
}

// waitFile waits for path to exist (an agent's signal), up to a bound
// that only keeps a broken run from hanging the test.
func waitFile(t *testing.T, path string, log *syncBuf) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared\n%s", path, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var _ = context.Background
