package crash

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/internal/e2e"
)

// A driver SIGKILLed while a sandboxed agent runs (issue 13): the agent
// dies with it (die-with-parent), its commit is then only on the private
// branch ref of its attempt, and the next run carries it back to the
// branch before anything else reads it, so no commit is lost.
func TestSandboxDriverKilledKeepsAgentCommits(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the driver")
	}
	for _, p := range []string{"git", "bwrap"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed (bubblewrap: apt-get install bubblewrap)", p)
		}
	}
	t.Parallel()
	bin := e2e.SelfAs(t, "claudopilot")
	agent := filepath.Join(e2e.Agents(t), "i13-crash.sh")
	dir := t.TempDir()
	env := e2e.Env(dir, filepath.Join(dir, "trace"))
	// The agents meet in ~/rv, writable in the sandbox (SANDBOX_RW).
	if err := os.MkdirAll(filepath.Join(dir, "rv"), 0o755); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dir, "repo")
	e2e.Git(t, dir, env, "init", "-q", "-b", "main", repo)
	for name, body := range map[string]string{
		"roadmap/EXECUTION-MANIFEST.md": "# Crash\n\n1. [pending] **phase-01** — killed once (deps: none)\n",
		"roadmap/phase-01.md":           "# phase-01\n",
	} {
		p := filepath.Join(repo, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e2e.Git(t, repo, env, "add", "-A")
	e2e.Git(t, repo, env, "commit", "-qm", "roadmap")
	start := func() (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(bin, "run", "roadmap", "--base", "main", "--agent", agent, "--sandbox", "--sandbox-rw", filepath.Join(dir, "rv"), "--poll-seconds", "1")
		cmd.Dir, cmd.Env = repo, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &out
	}

	cmd, out := start()
	committed := filepath.Join(dir, "rv", "i13crash", "committed")
	deadline := time.Now().Add(e2e.Bound(t))
	for {
		if _, err := os.Stat(committed); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the agent never committed:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// The commit is not on the real branch yet: only in the private folder.
	if log := e2e.Git(t, repo, env, "log", "--format=%s", "auto/phase-01"); strings.Contains(log, "before the kill") {
		t.Fatalf("auto/phase-01 already has the commit; the test proves nothing:\n%s", log)
	}

	cmd, out = start()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the second run: %v\n%s", err, out)
		}
	case <-time.After(e2e.Bound(t)):
		cmd.Process.Kill()
		t.Fatalf("the second run did not end:\n%s", out)
	}
	if log := e2e.Git(t, repo, env, "log", "--format=%s", "main"); !strings.Contains(log, "before the kill") {
		t.Errorf("main lacks the commit made before the kill:\n%s\n%s", log, out)
	}
	if !strings.Contains(out.String(), "sandbox: moved auto/phase-01 to ") {
		t.Errorf("no warning says the tip was carried back:\n%s", out)
	}
}
