package issues

import (
	"os"
	"strings"
	"testing"
)

func TestOnceExitsOnEmptyQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fake.AddLabel(ghfakeLabel("agent-ready", "123456", "mine"))
	log := &syncBuf{}
	q := e.queue("w", log, nil)
	sum := run(t, q, log)
	if len(sum.Results) != 0 {
		t.Fatalf("results %+v", sum.Results)
	}
	// Missing labels are created; the existing one is left as it was.
	got := map[string]string{}
	for _, l := range e.fake.Labels() {
		got[l.Name] = l.Color + " " + l.Description
	}
	if got["agent-ready"] != "123456 mine" {
		t.Errorf("existing label changed: %q", got["agent-ready"])
	}
	for _, l := range []string{"agent-running", "agent-blocked", "user-merge-review"} {
		if _, ok := got[l]; !ok {
			t.Errorf("label %s not created (have %v)", l, got)
		}
	}
	for _, r := range e.fake.Requests() {
		if strings.Contains(r.Path, "/labels/") && r.Method == "PATCH" {
			t.Errorf("a label was modified: %+v", r)
		}
	}
}

func TestWorksIssueToMerge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "Add a widget", "Please add a widget.", []string{"agent-ready"}, "")
	log := &syncBuf{}
	q := e.queue("w", log, nil)
	sum := run(t, q, log)
	if sum.Count(Merged) != 1 {
		t.Fatalf("summary %+v\nlog:\n%s\n%s", sum, log, dump(e, n))
	}
	is := e.issue(n)
	if is.State != "closed" || hasLabel(is, "agent-running") || hasLabel(is, "agent-ready") {
		t.Errorf("issue after merge: %s", dump(e, n))
	}
	if !e.onMain("work/issue-1.txt") {
		t.Errorf("the work is not on origin's main")
	}
	if c := commentsWith(is, "claimed by "+q.Instance()); c != 1 {
		t.Errorf("%d claim comments\n%s", c, dump(e, n))
	}
	prs := e.fake.Pulls()
	if len(prs) != 1 || !prs[0].Merged || !strings.Contains(prs[0].Body, "Closes #1") || prs[0].Head != "claudopilot/issue-1" {
		t.Errorf("pulls %+v", prs)
	}
	if _, err := os.Stat(q.WorktreePath(n)); !os.IsNotExist(err) {
		t.Errorf("worktree kept after merge: %v", err)
	}
}
