package queue

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/e2e"
)

// Queue mode under SANDBOX=bwrap (issue 13): issue #1's agent
// (i13-queue-hostile.sh) looks for GITHUB_TOKEN in every process it can
// see, the driver's included, and reads the base checkout and issue #2's
// worktree while #2's agent runs. All of it is hidden; both issues' work
// still merges. Without the sandbox the same agent finds the token in the
// driver's /proc/<pid>/environ.
func TestQueueSandboxHidesDriverAndNeighbours(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the driver against a fake GitHub")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap (bwrap) is not installed: the sandbox tests need it (apt-get install bubblewrap)")
	}
	t.Parallel()
	bin := e2e.SelfAs(t, "claudopilot")
	agent := filepath.Join(e2e.Agents(t), "i13-queue-hostile.sh")
	dir := t.TempDir()
	env := e2e.Env(dir, filepath.Join(dir, "trace"))
	// The agents meet in ~/rv, writable in the sandbox (SANDBOX_RW).
	if err := os.MkdirAll(filepath.Join(dir, "rv"), 0o755); err != nil {
		t.Fatal(err)
	}
	origin := filepath.Join(dir, "origin.git")
	seedOrigin(t, env, origin, "seed", map[string]string{"README": "seed\n"})

	fake := fakeGitHub(t, origin, env, "tok-sandbox-123")
	fake.NewIssue("alice", "Hostile", "Try to escape.", []string{"agent-ready"}, "alice")
	fake.NewIssue("alice", "Neighbour", "Work beside it.", []string{"agent-ready"}, "alice")

	work := filepath.Join(dir, "work")
	e2e.Git(t, dir, env, "clone", "-q", origin, work)
	if err := os.WriteFile(filepath.Join(work, "base-secret.txt"), []byte("the base checkout's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "queue", "--once", "--base", "main", "--agent", agent, "--sandbox", "--sandbox-rw", filepath.Join(dir, "rv"),
		"--max-parallel", "2", "--poll-seconds", "1")
	cmd.Dir = work
	cmd.Env = append(env, "GITHUB_TOKEN=tok-sandbox-123", "GITHUB_API_URL="+fake.URL(), "GH_REPO=acme/widgets", "AUTO_MERGE=1", "CHECKS_GRACE=0.2")
	out := runWithin(t, cmd, "queue --sandbox")
	for _, n := range []int{1, 2} {
		if is, ok := fake.Issue(n); !ok || is.State != "closed" {
			t.Errorf("issue #%d = %+v, want closed by its merged pull request\n%s", n, is, out.String())
		}
	}
	got := e2e.Git(t, dir, env, "--git-dir", origin, "show", "main:work/result.txt")
	if want := "token hidden\nread-base hidden\nread-other hidden\n"; got != want {
		t.Errorf("the hostile agent recorded:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(out.String(), "tok-sandbox-123") {
		t.Errorf("the token appears in the driver's output:\n%s", out.String())
	}
}
