package queue

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/e2e"
	"github.com/claudopilot/claudopilot/issues/ghfake"
)

// run --issues with REVIEW_CMD: the scheduler's review gate reviews the
// issue too, in the one REVIEW_SLOTS pool (1 here), so a phase's reviewer
// and an issue's never run at once. The queue used to review its issues
// itself, with a pool of its own beside the loop's. Each reviewer waits
// (at most 3 s) for another to run beside it, unless one has already
// run; both agents finish together, so both reviews are due together.
func TestRunIssuesOneReviewPool(t *testing.T) {
	if !e2e.Soak() {
		t.Skip("proven in package tests (scheduler TestOutsideReviewedByTheLoop, TestReviewSlotNeverBorrowed); TestQueueHostileIssueReviewed reviews an issue end to end; CLAUDOPILOT_SOAK=1 runs it")
	}
	if testing.Short() {
		t.Skip("runs the driver against a fake GitHub")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	t.Parallel()
	bin := e2e.SelfAs(t, "claudopilot")
	dir := t.TempDir()
	env := e2e.Env(dir, filepath.Join(dir, "trace"))
	origin := filepath.Join(dir, "origin.git")
	seedOrigin(t, env, origin, "roadmap", map[string]string{
		"roadmap/EXECUTION-MANIFEST.md": "# Reviews\n\n1. [pending] **p0** — a phase (deps: none)\n",
		"roadmap/p0.md":                 "# p0\n",
	})
	fake := fakeGitHub(t, origin, env, "tok-123")
	fake.SetCI(func(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
		return []ghfake.CheckRun{{Name: "ci/test", Status: "completed", Conclusion: "success"}}, nil
	})
	fake.NewIssue("alice", "Add a file", "Write issue.txt.", []string{"agent-ready"}, "alice")
	work := filepath.Join(dir, "work")
	e2e.Git(t, dir, env, "clone", "-q", origin, work)
	running, reviewed, seen, issueDone := filepath.Join(dir, "running"), filepath.Join(dir, "reviewed"), filepath.Join(dir, "seen"), filepath.Join(dir, "issue-done")
	for _, d := range []string{running, reviewed} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\nset -e\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	agent := script("agent.sh", `echo "$CLAUDOPILOT_PHASE" > out.txt
git add -A && git commit -qm work
case "$CLAUDOPILOT_PHASE" in
"#"*) touch "$ISSUE_DONE" ;;
*)	i=0; while [ ! -e "$ISSUE_DONE" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
	d=$(dirname "$CLAUDOPILOT_PHASE_DOC"); b=$(basename "$CLAUDOPILOT_PHASE_DOC")
	git mv "$CLAUDOPILOT_PHASE_DOC" "$d/DONE_$b" && git commit -qm done ;;
esac
`)
	reviewer := script("reviewer.sh", `me="$RUNNING/$$"; touch "$me"
i=0
while [ $i -lt 30 ] && [ "$(ls "$RUNNING" | wc -l)" -lt 2 ] && [ "$(ls "$REVIEWED" | wc -l)" -lt 1 ]; do sleep 0.1; i=$((i+1)); done
echo "$CLAUDOPILOT_PHASE $(ls "$RUNNING" | wc -l)" >> "$SEEN"
rm -f "$me"; touch "$REVIEWED/$$"
pr=""; [ -z "$CLAUDOPILOT_REVIEW_PR" ] || pr=",\"pr\":$CLAUDOPILOT_REVIEW_PR"
printf '<!-- claudopilot-review:v1 {"fingerprint":"%s","phase":"%s","head":"%s","base":"%s","verdict":"PASS","findings":[]%s} -->\n' \
	"$CLAUDOPILOT_REVIEW_FINGERPRINT" "$CLAUDOPILOT_PHASE" "$CLAUDOPILOT_REVIEW_HEAD" "$CLAUDOPILOT_REVIEW_BASE" "$pr"
`)
	cmd := exec.Command(bin, "run", "--issues", "--once", "--base", "main", "--agent", agent, "--review", reviewer, "--review-slots", "1",
		"--max-supervisor-attempts", "0", "--poll-seconds", "1", "roadmap")
	cmd.Dir = work
	cmd.Env = append(env, "GITHUB_TOKEN=tok-123", "GITHUB_API_URL="+fake.URL(), "GH_REPO=acme/widgets", "AUTO_MERGE=1", "CHECKS_GRACE=0.1",
		"RUNNING="+running, "REVIEWED="+reviewed, "SEEN="+seen, "ISSUE_DONE="+issueDone)
	out := runWithin(t, cmd, "run --issues")
	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("no reviewer ran: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "#1 ") }) {
		t.Fatalf("reviewers %q, want one for p0 and one for #1\n%s", lines, out)
	}
	for _, l := range lines {
		if !strings.HasSuffix(l, " 1") {
			t.Errorf("reviewer %q ran beside another: REVIEW_SLOTS is 1 for phases and issues together\n%s", l, out)
		}
	}
	if is, _ := fake.Issue(1); is.State != "closed" {
		t.Errorf("issue #1 = %+v, want closed\n%s", is, out)
	}
	live, _ := os.ReadFile(filepath.Join(work, "roadmap", "EXECUTION-MANIFEST.md"))
	if !strings.Contains(string(live), "[merged] **p0**") {
		t.Errorf("manifest:\n%s\n%s", live, out)
	}
}
