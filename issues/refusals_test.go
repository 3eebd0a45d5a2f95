package issues

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/issues/ghfake"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

// TestMergeMethodAuto (issue 24 §4): a repository that allows only squash
// merges answers 405 "Merge commits are not allowed on this repository"
// to a merge commit. MERGE_METHOD=auto, the default, reads
// allow_merge_commit, allow_squash_merge and allow_rebase_merge and takes
// the first allowed of merge, squash, rebase; where GitHub does not show
// them (a token that may not push sees none), the refusal teaches it. An
// explicit method the repository refuses is named at start, and its
// block's advice is not a plain retry. Before, every merge blocked with
// GitHub's raw text.
func TestMergeMethodAuto(t *testing.T) {
	t.Parallel()
	if !soak() {
		t.Skip("three queue runs: CLAUDOPILOT_SOAK=1 only; TestLandMergeMethodAuto proves the same three cases through Land and Record, without an agent run")
	}
	for _, tc := range []struct {
		name, method string
		hidden       bool // the token does not see allow_* (no push access shown)
		merged       bool
		log          []string
	}{
		{"auto reads the settings", "", false, true, []string{"MERGE_METHOD now defaults to auto (was merge): merging with squash"}},
		{"auto learns from the refusal", "", true, true, []string{"the repository refuses merge merges; MERGE_METHOD=auto merges with squash"}},
		{"an explicit method refused", "merge", false, false, []string{"MERGE_METHOD=merge: the repository does not allow merge merges (it allows: squash)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.fake.SetMergeMethods(false, true, false)
			tok := token
			if tc.hidden {
				tok = "reader-token"
				e.fake.AddUser("reader", "triage")
				e.fake.AddToken(tok, "reader")
			}
			n := e.fake.NewIssue("alice", "squash only", "work", []string{"agent-ready"}, "")
			log := &syncBuf{}
			q := e.queue("w", log, func(c *Config) {
				c.MergeMethod, c.MergeMethodDefaulted = tc.method, tc.method == ""
				if tc.hidden {
					c.GitHub = e.github(func(g *GitHubConfig) { g.Token = tok })
					c.Token = tok
				}
			})
			sum := run(t, q, log)
			if got := sum.Count(Merged) == 1; got != tc.merged {
				t.Fatalf("merged %v, want %v: %+v\n%s\n%s", got, tc.merged, sum, log, dump(e, n))
			}
			for _, w := range tc.log {
				if !strings.Contains(log.String(), w) {
					t.Errorf("the log lacks %q:\n%s", w, log)
				}
			}
			if !tc.merged {
				is := e.issue(n)
				block := is.Comments[len(is.Comments)-1].Body
				for _, w := range []string{"does not allow this merge method", "Merge commits are not allowed on this repository.", "Set MERGE_METHOD=auto"} {
					if !strings.Contains(block, w) {
						t.Errorf("the block comment lacks %q:\n%s", w, block)
					}
				}
				if strings.Contains(block, "http") {
					t.Errorf("the block comment shows a URL:\n%s", block)
				}
			}
		})
	}
}

// TestApprovalRequired (issue 24 §4): branch protection wants an
// approving review: 405 "At least 1 approving review is required by
// reviewers with write access." The pull request gets APPROVAL_LABEL (the
// issue too) and one comment; no agent runs; once a maintainer approves,
// the driver merges it. Without an approval within CLAIM_STALE_HOURS it is
// left for a human (REVIEW_LABEL). Before, the issue was blocked, and the
// advice (queue it again) re-ran the agent into the same refusal.
func TestApprovalRequired(t *testing.T) {
	t.Parallel()
	for _, approve := range []bool{true, false} {
		name := map[bool]string{true: "approved", false: "none within CLAIM_STALE_HOURS"}[approve]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if !soak() {
				t.Skip("a queue run: CLAUDOPILOT_SOAK=1 only; TestLandApprovalRequired/" + name + " proves it through Land and Record (no agent runs again: the refusal waits in Land)")
			}
			e := newEnv(t)
			e.fake.RequireApprovals(1)
			n := e.fake.NewIssue("alice", "protected", "work", []string{"agent-ready"}, "")
			record := e.dir + "/record"
			waiting := make(chan int, 1)
			e.fake.OnMerge(func(pr int) {
				select {
				case waiting <- pr:
				default:
				}
			})
			log := &syncBuf{}
			q := e.queue("w", log, func(c *Config) {
				c.Env = append(c.Env, "RECORD="+record)
				c.ClaimStale = 2 * time.Second // on the virtual clock, which each wait moves on
			})
			if approve {
				// Approved once the first merge is refused, before the
				// refusal is answered (approving at the merge request raced
				// the fake's own approval check: the merge then went through
				// unrefused, seen once in a quiet suite at d76c38a).
				e.fake.OnApprovalRefusal(func(pr int) { e.fake.Review(pr, "alice", "APPROVED") })
			}
			done := make(chan Summary, 1)
			go func() { done <- run(t, q, log) }()
			pr := <-waiting
			sum := <-done
			is := e.issue(n)
			if approve {
				if sum.Count(Merged) != 1 || hasLabel(is, "agent-awaiting-approval") {
					t.Fatalf("summary %+v labels %v\n%s\n%s", sum, is.Labels, log, dump(e, n))
				}
			} else {
				p, _ := e.fake.Issue(pr)
				if sum.Count(Review) != 1 || !hasLabel(is, "agent-awaiting-approval") || !hasLabel(p, "agent-awaiting-approval") || !hasLabel(is, "user-merge-review") {
					t.Fatalf("summary %+v labels %v, PR %v\n%s\n%s", sum, is.Labels, p.Labels, log, dump(e, n))
				}
				if commentsWith(is, "No approving review came within CLAIM_STALE_HOURS") != 1 {
					t.Errorf("%s", dump(e, n))
				}
			}
			if commentsWith(is, "requires an approving review") != 1 || commentsWith(is, "could not finish") != 0 {
				t.Errorf("comments:\n%s", dump(e, n))
			}
			if b, _ := readFile(record); strings.Count(b, "#") != 1 {
				t.Errorf("the agent ran %d times, want once", strings.Count(b, "#"))
			}
		})
	}
}

func readFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}

var _ = ghfake.MsgMergeQueue

// TestMergeQueue (issue 24 §4): the base takes changes only through
// GitHub's merge queue: 405 "Changes must be made through the merge
// queue". The driver enqueues the pull request (GraphQL
// enqueuePullRequest, the head's oid expected) and follows it to merged.
// A merge group whose checks fail is removed from the queue: that goes to
// the supervisor like red checks, whose repair is queued again and
// merged. Before, the issue was blocked with GitHub's raw text.
func TestMergeQueue(t *testing.T) {
	t.Parallel()
	if !soak() {
		t.Skip("a queue run with a repair: CLAUDOPILOT_SOAK=1 only; TestLandMergeQueue proves the enqueue, the removal as red checks with the head to repair, and the repair's merge through Land")
	}
	e := newEnv(t)
	e.fake.SetMergeQueue(true)
	// CI fails a merge group (any commit) until the branch has FIXED.
	e.fake.SetCI(e.ci())
	n := e.fake.NewIssue("alice", "through the queue", "work", []string{"agent-ready"}, "")
	agent := e.script("fix.sh", `if [ "$CLAUDOPILOT_FAILURE" = checks ]; then
	echo fixed > FIXED && git add FIXED && git commit -qm fix && exit 0
fi
`+okAgent)
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) { c.Agent = agent }) // 2 repairs: the default
	// The pull request's own checks pass: only the merge group's run CI
	// that fails, as a base-plus-head commit can.
	e.fake.SetCI(func(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
		runs, sts := e.ci()(sha)
		for _, p := range e.fake.Pulls() {
			if p.Head != "" && sha == e.originRef("refs/heads/"+p.Head) {
				return nil, nil
			}
		}
		return runs, sts
	})
	sum := run(t, q, log)
	if sum.Count(Merged) != 1 || !e.onMain("FIXED") {
		t.Fatalf("summary %+v\n%s\n%s", sum, log, dump(e, n))
	}
	for _, w := range []string{"added to the merge queue", "the merge queue removed pull request", "failed status checks", "the merge queue merged pull request"} {
		if !strings.Contains(log.String(), w) {
			t.Errorf("the log lacks %q:\n%s", w, log)
		}
	}
}

// TestLandMergeMethodAuto is TestMergeMethodAuto through Land and Record
// (the queue's landing, without an agent run): on a repository that
// allows only squash, MERGE_METHOD=auto reads the settings at Start and
// takes squash for its merges; a token that does not see them merges with
// merge, is refused, learns squash and merges with it; an explicit merge
// is named at Start, refused at the merge, and its block comment advises
// MERGE_METHOD=auto, not a plain retry, and shows no URL. The settings
// case lands nothing: every merge sends the method in use (worker.merge,
// q.mergeMethod), and the learning case's merge with squash is one.
func TestLandMergeMethodAuto(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, method string
		hidden       bool // the token does not see allow_* (no push access shown)
		merged       bool
		log          string
		startOnly    bool // Start's pick only: no landing
	}{
		{"auto reads the settings", "", false, true, "MERGE_METHOD now defaults to auto (was merge): merging with squash", true},
		{"auto learns from the refusal", "", true, true, "the repository refuses merge merges; MERGE_METHOD=auto merges with squash", false},
		{"an explicit method refused", "merge", false, false, "MERGE_METHOD=merge: the repository does not allow merge merges (it allows: squash)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.fake.SetMergeMethods(false, true, false)
			tok := token
			if tc.hidden {
				tok = "reader-token"
				e.fake.AddUser("reader", "triage")
				e.fake.AddToken(tok, "reader")
			}
			n := e.fake.NewIssue("alice", "squash only", "work", []string{"agent-ready"}, "")
			l := newLander(t, e, n, func(c *Config) {
				c.MergeMethod, c.MergeMethodDefaulted = tc.method, tc.method == ""
				if tc.hidden {
					c.GitHub = e.github(func(g *GitHubConfig) { g.Token = tok })
					c.Token = tok
				}
			})
			if tc.startOnly {
				if m := l.q.mergeMethod(); m != "squash" || !strings.Contains(l.log.String(), tc.log) {
					t.Errorf("Start took %q, want squash; log:\n%s", m, l.log)
				}
				return
			}
			out := l.land(l.commit(t, "work.txt", "work\n"))
			if out.OK != tc.merged {
				t.Fatalf("merged %v, want %v: %+v\n%s\n%s", out.OK, tc.merged, out, l.log, dump(e, n))
			}
			if !strings.Contains(l.log.String(), tc.log) {
				t.Errorf("the log lacks %q:\n%s", tc.log, l.log)
			}
			if tc.merged {
				if p := e.fake.Pulls(); len(p) != 1 || !p[0].Merged {
					t.Errorf("pull requests %+v", p)
				}
				return
			}
			l.q.Record(l.id, manifest.Blocked, scheduler.Note{Reason: out.Reason, Detail: out.Detail, LogPath: out.LogPath})
			l.drain()
			is := e.issue(n)
			block := is.Comments[len(is.Comments)-1].Body
			for _, w := range []string{"does not allow this merge method", "Merge commits are not allowed on this repository.", "Set MERGE_METHOD=auto"} {
				if !strings.Contains(block, w) {
					t.Errorf("the block comment lacks %q:\n%s", w, block)
				}
			}
			if strings.Contains(block, "http") {
				t.Errorf("the block comment shows a URL:\n%s", block)
			}
		})
	}
}

// TestLandApprovalRequired is TestApprovalRequired through Land: the
// merge refused for want of an approving review labels the pull request
// and the issue APPROVAL_LABEL with one comment, and the landing waits in
// Land (no failure: no agent runs again); an approval is merged, and
// without one within CLAIM_STALE_HOURS the pull request is handed to a
// human (REVIEW_LABEL, one comment saying so).
func TestLandApprovalRequired(t *testing.T) {
	t.Parallel()
	for _, approve := range []bool{true, false} {
		name := map[bool]string{true: "approved", false: "none within CLAIM_STALE_HOURS"}[approve]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.fake.RequireApprovals(1)
			n := e.fake.NewIssue("alice", "protected", "work", []string{"agent-ready"}, "")
			if approve {
				// The maintainer approves once the merge is refused, before
				// the refusal is answered: no polling, and no race with the
				// virtual clock the landing's waits move on.
				e.fake.OnApprovalRefusal(func(pr int) { e.fake.Review(pr, "alice", "APPROVED") })
			}
			l := newLander(t, e, n, func(c *Config) {
				c.ClaimStale = 2 * time.Second // on the virtual clock, which each wait moves on
			})
			out := l.land(l.commit(t, "work.txt", "work\n"))
			if approve {
				if !out.OK || !e.onMain("work.txt") {
					t.Fatalf("approved: %+v\n%s\n%s", out, l.log, dump(e, n))
				}
				l.q.Record(l.id, manifest.Merged, scheduler.Note{})
			} else if !out.Away || out.OK || out.Reason != "" {
				t.Fatalf("no approval: %+v, want it handed to a human\n%s\n%s", out, l.log, dump(e, n))
			}
			l.drain()
			is := e.issue(n)
			pr := e.fake.Pulls()[0].Number
			p, _ := e.fake.Issue(pr)
			if approve {
				if hasLabel(is, "agent-awaiting-approval") || l.q.Summary().Count(Merged) != 1 {
					t.Errorf("after the approval: summary %+v\n%s", l.q.Summary(), dump(e, n))
				}
			} else {
				if l.q.Summary().Count(Review) != 1 || !hasLabel(is, "agent-awaiting-approval") || !hasLabel(p, "agent-awaiting-approval") || !hasLabel(is, "user-merge-review") {
					t.Errorf("summary %+v labels %v, PR %v\n%s", l.q.Summary(), is.Labels, p.Labels, dump(e, n))
				}
				if commentsWith(is, "No approving review came within CLAIM_STALE_HOURS") != 1 {
					t.Errorf("%s", dump(e, n))
				}
			}
			if commentsWith(is, "requires an approving review") != 1 || commentsWith(is, "could not finish") != 0 {
				t.Errorf("comments:\n%s", dump(e, n))
			}
		})
	}
}

// TestLandMergeQueue is TestMergeQueue through Land: the base takes
// changes only through GitHub's merge queue (405); the pull request is
// enqueued and followed; a merge group whose checks fail is removed, and
// the landing ends as red checks with the head for the supervisor to
// repair; the repair's head is enqueued again and merged.
func TestLandMergeQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fake.SetMergeQueue(true)
	// The pull request's own checks pass: only the merge group's, a
	// base-plus-head commit, fail until the branch has FIXED.
	e.fake.SetCI(func(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
		for _, p := range e.fake.Pulls() {
			if p.Head != "" && sha == e.originRef("refs/heads/"+p.Head) {
				return nil, nil
			}
		}
		return e.ci()(sha)
	})
	n := e.fake.NewIssue("alice", "through the queue", "work", []string{"agent-ready"}, "")
	l := newLander(t, e, n, nil)
	red := l.commit(t, "work.txt", "work\n")
	out := l.land(red)
	if out.OK || out.Reason != state.ReasonChecks || out.Commit != red ||
		!strings.Contains(out.Detail, "the merge queue removed pull request") || !strings.Contains(out.Detail, "failed status checks") {
		t.Fatalf("a failed merge group: %+v, want red checks on %s for a repair\n%s", out, short(red), l.log)
	}
	fixed := l.commit(t, "FIXED", "fixed\n")
	if out := l.land(fixed); !out.OK || !e.onMain("FIXED") {
		t.Fatalf("the repair: %+v\n%s", out, l.log)
	}
	for _, w := range []string{"added to the merge queue", "the merge queue merged pull request"} {
		if !strings.Contains(l.log.String(), w) {
			t.Errorf("the log lacks %q:\n%s", w, l.log)
		}
	}
}
