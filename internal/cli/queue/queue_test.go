package queue

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/issues/ghfake"
)

// A queue with PROMOTE_TO on a repository that allows no merge commits is
// refused loudly at start (exit 64, the reason named) before it claims,
// labels or comments on anything: a promotion is always a merge commit.
func TestPromoteRefusedAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x"}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	origin, work := filepath.Join(dir, "origin.git"), filepath.Join(dir, "work")
	git("init", "-q", "--bare", "-b", "main", origin)
	git("clone", "-q", origin, work)
	os.WriteFile(filepath.Join(work, "README.md"), []byte("# w\n"), 0o644)
	git("-C", work, "add", "-A")
	git("-C", work, "commit", "-qm", "init")
	git("-C", work, "push", "-q", "origin", "main", "main:staging")
	fake := ghfake.New(ghfake.Options{Owner: "acme", Repo: "widgets", Origin: origin, GitEnv: env})
	t.Cleanup(fake.Close)
	fake.AddUser("alice", "admin")
	fake.AddUser("bot", "write")
	fake.AddToken("tok-1", "bot")
	fake.NewIssue("alice", "Ready", "work", []string{"agent-ready"}, "alice")
	fake.SetMergeMethods(false, true, true)
	full := append(env, "GITHUB_TOKEN=tok-1", "GITHUB_API_URL="+fake.URL(), "GH_REPO=acme/widgets",
		"PROMOTE_TO=staging", "AGENT_CMD=false")
	var out bytes.Buffer
	a := &cmdutil.App{S: &cmdutil.Streams{Out: &out, Err: &out}, Cwd: work, Env: cmdutil.EnvMap(full)}
	err := NewCmd(nil).Run(context.Background(), a, []string{"--once"})
	if code := cmdutil.ExitCode(err, nil); code != cmdutil.ExitUsage || err == nil || !strings.Contains(err.Error(), "allows none") {
		t.Fatalf("exit %d, %v\n%s", code, err, out.String())
	}
	for _, r := range fake.Requests() {
		if r.Method != "GET" {
			t.Errorf("a refused start wrote: %s %s", r.Method, r.Path)
		}
	}
	if is, _ := fake.Issue(1); len(is.Labels) != 1 || len(is.Comments) != 0 {
		t.Errorf("the issue changed: %+v", is)
	}
	// The driver's own state folder (the lock, the instance's name, an
	// empty journal) is all a refused start leaves: nothing recorded.
	if b, _ := os.ReadFile(filepath.Join(work, ".claudopilot", "state", "journal.jsonl")); len(b) > 0 {
		t.Errorf("the journal holds:\n%s", b)
	}
}
