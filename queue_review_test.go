package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/review"
)

// queue --review: the reviewer runs before the pull request is handed for
// review, its verdict is posted on the pull request by the driver's own
// identity, and the labels follow (user-merge-review after the PASS, as
// AUTO_MERGE is off).
func TestQueueReviewFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the driver against a fake GitHub")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	t.Parallel()
	bin := selfAs(t, "claudopilot")
	dir := t.TempDir()
	env := crashEnv(dir, filepath.Join(dir, "trace"))
	origin := filepath.Join(dir, "origin.git")
	seed := filepath.Join(dir, "seed")
	seedOrigin(t, env, origin, seed, "init", map[string]string{"README.md": "# widgets\n"})

	fake := fakeGitHub(t, origin, env, "tok-123")
	fake.NewIssue("alice", "Add the API", "Write work/issue.txt.", []string{"agent-ready"}, "alice")

	work := filepath.Join(dir, "work")
	git(t, dir, env, "clone", "-q", origin, work)
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\nset -e\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	agent := script("agent.sh", "mkdir -p work && echo issue > work/issue.txt\ngit add -A && git commit -qm 'issue work'\n")
	reviewer := script("reviewer.sh", `test "$CLAUDOPILOT_ROLE" = reviewer
test "$CLAUDOPILOT_REVIEW_LENS" = security
printf '<!-- claudopilot-review:v1 {"fingerprint":"%s","phase":"%s","head":"%s","base":"%s","verdict":"PASS","findings":[],"pr":%s} -->\n' \
	"$CLAUDOPILOT_REVIEW_FINGERPRINT" "$CLAUDOPILOT_PHASE" "$CLAUDOPILOT_REVIEW_HEAD" "$CLAUDOPILOT_REVIEW_BASE" "$CLAUDOPILOT_REVIEW_PR"
`)
	cmd := exec.Command(bin, "queue", "--once", "--agent", agent, "--review", reviewer, "--review-lenses", "security", "--poll-seconds", "1", "--checks-grace", "0.1")
	cmd.Dir = work
	cmd.Env = append(env, "GITHUB_TOKEN=tok-123", "GITHUB_API_URL="+fake.URL(), "GH_REPO=acme/widgets")
	out := runWithin(t, cmd, "queue", 3*time.Minute)
	prs := fake.Pulls()
	if len(prs) != 1 || prs[0].Merged {
		t.Fatalf("pull requests %+v\n%s", prs, out.String())
	}
	pr, _ := fake.Issue(prs[0].Number)
	var verdicts []review.Marker
	for _, c := range pr.Comments {
		if c.Author == "bot" {
			verdicts = append(verdicts, review.Parse([]byte(c.Body))...)
		}
	}
	if len(verdicts) != 1 || verdicts[0].Verdict != review.Pass || verdicts[0].PR != prs[0].Number {
		t.Fatalf("verdicts %+v\n%s", verdicts, out.String())
	}
	is, _ := fake.Issue(1)
	if !strings.Contains(strings.Join(is.Labels, ","), "user-merge-review") || strings.Contains(strings.Join(pr.Labels, ","), "agent-review") {
		t.Fatalf("issue labels %v, pull request labels %v", is.Labels, pr.Labels)
	}
	if !strings.Contains(out.String(), "review PASS in round 1") {
		t.Errorf("output:\n%s", out.String())
	}
}
