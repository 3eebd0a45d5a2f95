package queue

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/e2e"
	"github.com/claudopilot/claudopilot/issues/ghfake"
)

// queue without a roadmap retries as run does (one engine, one retry
// policy): an issue whose checks stay red gets the MAX_SUPERVISOR_ATTEMPTS_
// PER_PHASE default of 2 repair runs, as a phase does, then is blocked.
// The queue used to hard-code 3 repair rounds and 3 transient retries for
// itself; the changed default is announced until the user sets it.
func TestQueueRetriesAsRunDoes(t *testing.T) {
	if !e2e.Soak() {
		t.Skip("proven in package tests (internal/cli/wire TestOneRetryPolicy: queue alone and run --issues get the same repair runs and retries; scheduler TestOutsideLandingRoutes/checks_stay_red: blocked after MAX_SUPERVISOR_ATTEMPTS_PER_PHASE repairs; issues TestLandChecksTimeoutThenBlocked: the blocked label and comment; internal/cli/run TestQueuePolicyNoteUntilSet: the changed defaults announced); CLAUDOPILOT_SOAK=1 runs it")
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
	seedOrigin(t, env, origin, "init", map[string]string{"README.md": "# widgets\n"})
	fake := fakeGitHub(t, origin, env, "tok-123")
	fake.SetCI(func(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
		return []ghfake.CheckRun{{Name: "ci/test", Status: "completed", Conclusion: "failure"}}, nil
	})
	fake.NewIssue("alice", "Never green", "Write a file.", []string{"agent-ready"}, "alice")
	work := filepath.Join(dir, "work")
	e2e.Git(t, dir, env, "clone", "-q", origin, work)
	record := filepath.Join(dir, "record")
	agent := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(agent, []byte(`#!/bin/sh
set -e
echo "$CLAUDOPILOT_ROLE" >> "$RECORD"
mkdir -p work && date +%s%N >> work/issue.txt
git add -A && git commit -qm "try again"
`), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "queue", "--once", "--agent", agent, "--poll-seconds", "1")
	cmd.Dir = work
	cmd.Env = append(env, "GITHUB_TOKEN=tok-123", "GITHUB_API_URL="+fake.URL(), "GH_REPO=acme/widgets", "AUTO_MERGE=1", "RECORD="+record)
	out := runWithin(t, cmd, "queue")
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Fields(string(b)), []string{"worker", "supervisor", "supervisor"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("agent runs %q, want %q (MAX_SUPERVISOR_ATTEMPTS_PER_PHASE's default, as for a phase)\n%s", got, want, out)
	}
	if is, _ := fake.Issue(1); !strings.Contains(strings.Join(is.Labels, ","), "agent-blocked") {
		t.Errorf("issue #1 labels %v, want blocked\n%s", is.Labels, out)
	}
	if !strings.Contains(out.String(), "note: the queue retries as run does: 2 repair runs per issue (MAX_SUPERVISOR_ATTEMPTS_PER_PHASE, was 3) and 10 retries") {
		t.Errorf("the changed defaults are not announced:\n%s", out)
	}
}
