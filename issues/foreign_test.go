package issues

import (
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
