package engine

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/issues/ghfake"
)

// The web page's retry of an issue is the same rule as the command's
// (Retry, issues.Requeue) when the queue runs beside it: a blocked issue
// is queued again; one that is not blocked is refused, nothing written.
// Without a queue the page refuses an issue (the server answers 409).
func TestWebRetryIssue(t *testing.T) {
	fake := ghfake.New(ghfake.Options{Owner: "acme", Repo: "widgets"})
	t.Cleanup(fake.Close)
	fake.AddUser("alice", "admin")
	fake.AddUser("bot", "write")
	fake.AddToken("tok", "bot")
	blocked := fake.NewIssue("alice", "Blocked", "b", []string{"agent-blocked"}, "alice")
	ready := fake.NewIssue("alice", "Ready", "r", []string{"agent-ready"}, "alice")
	gh, err := issues.NewGitHub(issues.GitHubConfig{Owner: "acme", Repo: "widgets", Token: "tok", APIURL: fake.URL()})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir() // a queue alone: no manifest
	w := webActions{ctx: context.Background(), state: t.TempDir(), dir: dir, issues: &IssueRetry{GitHub: gh, Labels: issues.DefaultLabels}}

	if err := w.Retry("#" + strconv.Itoa(ready)); err == nil || !strings.Contains(err.Error(), "not blocked") {
		t.Fatalf("retry of a ready issue: %v", err)
	}
	for _, r := range fake.Requests() {
		if r.Method != "GET" {
			t.Fatalf("a refused retry wrote: %s %s", r.Method, r.Path)
		}
	}
	if err := w.Retry("#" + strconv.Itoa(blocked)); err != nil {
		t.Fatal(err)
	}
	is, _ := fake.Issue(blocked)
	if !slices.Equal(is.Labels, []string{"agent-ready"}) || len(is.Comments) != 1 || !strings.Contains(is.Comments[0].Body, "claudopilot retry") {
		t.Fatalf("after retry: labels %v, comments %+v", is.Labels, is.Comments)
	}
	if is, _ := fake.Issue(ready); !slices.Equal(is.Labels, []string{"agent-ready"}) || len(is.Comments) != 0 {
		t.Fatalf("ready issue changed: %+v", is)
	}

	w.issues = nil
	if err := w.Retry("#1"); err == nil || !strings.Contains(err.Error(), "label it ready again on GitHub") {
		t.Fatalf("retry without a queue: %v", err)
	}
}
