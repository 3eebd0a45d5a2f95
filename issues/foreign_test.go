package issues

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestForeignClaimsAreLeftAlone: during a migration, issues another tool
// claimed are never worked nor released here. issue-pilot claims with its
// own label (in-pilot) and leaves READY_LABEL on, with a "claimed by
// <lane>" comment (kasbly/issue-pilot bin/lib.sh and bin/claim-janitor.sh);
// issue-orchestrator's claim label is agent-running, ours too, with an
// io-claim block in its comment. The comments below are written from
// those tools' formats, not copied.
func TestForeignClaimsAreLeftAlone(t *testing.T) {
	t.Parallel()
	if !soak() {
		t.Skip("a queue run: CLAUDOPILOT_SOAK=1 only; TestPollLeavesForeignClaimsAlone proves that a poll offers only the free issue and touches no foreign claim")
	}
	e := newEnv(t)
	pilot := e.fake.NewIssue("alice", "issue-pilot works it", "x", []string{"agent-ready", "in-pilot"}, "")
	e.fake.CommentOn(pilot, "alice", "claimed by Claude main")
	orch := e.fake.NewIssue("alice", "issue-orchestrator works it", "x", []string{"agent-running"}, "")
	e.fake.CommentOn(orch, "alice", "```io-claim\nlease_id: l-1\nclaimant: orchestrator-a\nstarted_at: 2026-12-04T12:00:00\nexpires_at: 2026-12-04T12:15:00\npriority: 1\n```")
	free := e.fake.NewIssue("alice", "nobody's", "x", []string{"agent-ready"}, "")
	e.clock.Advance(7 * time.Hour) // past CLAIM_STALE_HOURS by the label's age
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) { c.ForeignClaims = []string{"in-pilot", "agent-running"} })
	sum := run(t, q, log)
	if is := e.issue(free); is.State != "closed" {
		t.Errorf("the free issue was not worked:\n%s\n%s", dump(e, free), log)
	}
	for _, n := range []int{pilot, orch} {
		if is := e.issue(n); is.State != "open" || len(is.Comments) != 1 {
			t.Errorf("a foreign claim was touched:\n%s\n%s", dump(e, n), log)
		}
	}
	if !hasLabel(e.issue(orch), "agent-running") || !hasLabel(e.issue(pilot), "in-pilot") {
		t.Errorf("labels changed:\n%s\n%s", dump(e, pilot), dump(e, orch))
	}
	if len(sum.Released) != 0 || sum.Count(Merged) != 1 {
		t.Errorf("summary %+v", sum)
	}
	if !strings.Contains(log.String(), "skipped, claimed by another tool (in-pilot)") {
		t.Errorf("no note of the foreign claim:\n%s", log)
	}
}

// TestIssueOrchestratorClaims: issue-orchestrator (issue-orchestrator/
// issue-orchestrator) claims an issue with a compare-and-swap git ref
// (refs/issue-orchestrator/claims/issue-N) and puts its advisory label
// io:claimed on while it holds it; its older versions wrote the io-claim
// block in a comment, matched in any case by its parser. An issue carrying
// io:claimed (in FOREIGN_CLAIM_LABELS by default, see settings) is left
// alone; an upper-case IO-CLAIM comment under the shared claim label is
// never released as stale.
func TestIssueOrchestratorClaims(t *testing.T) {
	t.Parallel()
	if !soak() {
		t.Skip("a queue run: CLAUDOPILOT_SOAK=1 only; TestPollLeavesForeignClaimsAlone proves that a poll leaves io:claimed and an upper-case IO-CLAIM comment alone")
	}
	e := newEnv(t)
	labelled := e.fake.NewIssue("alice", "issue-orchestrator holds it", "x", []string{"agent-ready", "io:claimed"}, "")
	old := e.fake.NewIssue("alice", "an older issue-orchestrator holds it", "x", []string{"agent-running"}, "")
	e.fake.CommentOn(old, "alice", "```IO-CLAIM\nlease_id: l-2\nclaimant: orchestrator-b\nstarted_at: 2026-12-04T12:00:00\nexpires_at: 2026-12-04T12:15:00\npriority: 2\n```")
	e.clock.Advance(7 * time.Hour) // past CLAIM_STALE_HOURS by the label's age
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) { c.ForeignClaims = []string{"in-pilot", "agent-running", "io:claimed"} })
	sum := run(t, q, log)
	for _, n := range []int{labelled, old} {
		if is := e.issue(n); is.State != "open" || len(is.Comments) != map[int]int{labelled: 0, old: 1}[n] {
			t.Errorf("a foreign claim was touched:\n%s\n%s", dump(e, n), log)
		}
	}
	if !hasLabel(e.issue(labelled), "io:claimed") || !hasLabel(e.issue(old), "agent-running") {
		t.Errorf("labels changed:\n%s\n%s", dump(e, labelled), dump(e, old))
	}
	if len(sum.Released) != 0 || len(sum.Results) != 0 {
		t.Errorf("summary %+v", sum)
	}
	if !strings.Contains(log.String(), "skipped, claimed by another tool (io:claimed)") {
		t.Errorf("no note of the foreign claim:\n%s", log)
	}
}

// TestPollLeavesForeignClaimsAlone is TestForeignClaimsAreLeftAlone and
// TestIssueOrchestratorClaims at one poll, without a run: of issue-pilot's
// claim (in-pilot, READY_LABEL left on), issue-orchestrator's (the shared
// claim label with an io-claim comment, or IO-CLAIM from older versions,
// seven hours old: past CLAIM_STALE_HOURS) and its advisory io:claimed,
// none is offered, released or written to; the free issue is offered, and
// the log names the foreign label skipped.
func TestPollLeavesForeignClaimsAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pilot := e.fake.NewIssue("alice", "issue-pilot works it", "x", []string{"agent-ready", "in-pilot"}, "")
	e.fake.CommentOn(pilot, "alice", "claimed by Claude main")
	orch := e.fake.NewIssue("alice", "issue-orchestrator works it", "x", []string{"agent-running"}, "")
	e.fake.CommentOn(orch, "alice", "```io-claim\nlease_id: l-1\nclaimant: orchestrator-a\nstarted_at: 2026-12-04T12:00:00\nexpires_at: 2026-12-04T12:15:00\npriority: 1\n```")
	labelled := e.fake.NewIssue("alice", "issue-orchestrator holds it", "x", []string{"agent-ready", "io:claimed"}, "")
	old := e.fake.NewIssue("alice", "an older issue-orchestrator holds it", "x", []string{"agent-running"}, "")
	e.fake.CommentOn(old, "alice", "```IO-CLAIM\nlease_id: l-2\nclaimant: orchestrator-b\nstarted_at: 2026-12-04T12:00:00\nexpires_at: 2026-12-04T12:15:00\npriority: 2\n```")
	free := e.fake.NewIssue("alice", "nobody's", "x", []string{"agent-ready"}, "")
	e.clock.Advance(7 * time.Hour) // past CLAIM_STALE_HOURS by the label's age
	p := newPoller(t, e, func(c *Config) { c.ForeignClaims = []string{"in-pilot", "agent-running", "io:claimed"} })
	if ids, _ := p.poll(t); len(ids) != 1 || ids[0] != IssueID(free) {
		t.Errorf("offered %v, want only %s\n%s", ids, IssueID(free), p.log)
	}
	for n, label := range map[int]string{pilot: "in-pilot", orch: "agent-running", labelled: "io:claimed", old: "agent-running"} {
		is := e.issue(n)
		if is.State != "open" || len(is.Comments) != map[bool]int{true: 0, false: 1}[n == labelled] || !hasLabel(is, label) {
			t.Errorf("a foreign claim was touched:\n%s\n%s", dump(e, n), p.log)
		}
	}
	for _, l := range []string{"in-pilot", "io:claimed"} {
		if !strings.Contains(p.log.String(), "skipped, claimed by another tool ("+l+")") {
			t.Errorf("no note of the foreign claim %s:\n%s", l, p.log)
		}
	}
	if s := p.q.Summary(); len(s.Released) != 0 || len(s.Results) != 0 {
		t.Errorf("summary %+v", s)
	}
}

// TestLabelColoursFollowIssueOrchestrator: the labels the queue creates
// take issue-orchestrator's colour for the same role (its agent label,
// in-progress, blocked, needs-human, needs-code-review); one that exists is
// left as it is. The queue's Start makes them (no run needed).
func TestLabelColoursFollowIssueOrchestrator(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fake.AddLabel(ghfakeLabel("agent-blocked", "123456", "mine"))
	log := &syncBuf{}
	q := e.queue("w", log, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a bound, not a wait
	defer cancel()
	if err := q.Start(ctx); err != nil {
		t.Fatalf("Start: %v\n%s", err, log)
	}
	got := map[string]string{}
	for _, l := range e.fake.Labels() {
		got[l.Name] = strings.ToLower(l.Color)
	}
	want := map[string]string{
		"agent-ready": "1d76db", "agent-running": "5319e7", "agent-blocked": "123456",
		"user-merge-review": "fbca04", "agent-awaiting-approval": "7057ff",
	}
	for name, c := range want {
		if got[name] != c {
			t.Errorf("label %s: colour %q, want %q (all: %v)", name, got[name], c, got)
		}
	}
}
