package worktree_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/claudopilot/claudopilot/internal/githttp"
	"github.com/claudopilot/claudopilot/worktree"
)

// The push and fetch to GitHub get the token through a pipe (follow-up of
// issue 24 §1): while git talks to the remote, no process's environ or
// cmdline holds it (every process of the same user reads them), the
// driver's GITHUB_TOKEN is not in git's environment, and a credential
// helper planted in the repository's config is not asked. The remote is
// an origin over smart HTTP that wants the token, as GitHub's (and the
// fake GitHub's, issues/ghfake: the same githttp behind its token check;
// not ghfake itself, whose GitHub client was a third of this test
// binary's link, #23).
func TestRemoteCredentialComesOverAPipe(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	t.Parallel()
	ctx := context.Background()
	const tok = "tok-pipe-8d31f0"
	dir := t.TempDir()
	// git's housekeeping off (a `maintenance run --auto` after each
	// commit and fetch, a `gc --auto` after each receive: 5 processes
	// of this test's 68), as package kube's TestMain does.
	global := filepath.Join(dir, "gitconfig")
	if err := os.WriteFile(global, []byte("[maintenance]\n\tauto = false\n[gc]\n\tauto = 0\n[receive]\n\tautogc = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_GLOBAL=" + global, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.com"}
	origin := filepath.Join(dir, "origin.git")
	work := filepath.Join(dir, "work")
	for _, args := range [][]string{{"init", "-q", "--bare", "-b", "main", origin}, {"init", "-q", "-b", "main", work},
		{"-C", work, "commit", "-q", "--allow-empty", "-m", "seed"}, {"-C", work, "push", "-q", origin, "main"}} {
		if out, err := gitCmd(env, args...); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	var mu sync.Mutex
	var seen []string
	var asked int
	const prefix = "/acme/widgets.git"
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pass, ok := r.BasicAuth(); !ok || pass != tok {
			w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
			http.Error(w, "Invalid username or token.", http.StatusUnauthorized)
			return
		}
		// While the client's git waits for the answer.
		hits := procsHolding(tok)
		mu.Lock()
		asked++
		seen = append(seen, hits...)
		mu.Unlock()
		githttp.Serve(w, r, env, origin, prefix, "bot")
	}))
	t.Cleanup(fake.Close)
	for _, args := range [][]string{{"-C", work, "remote", "add", "origin", fake.URL + prefix},
		{"-C", work, "config", "credential.helper", "!f() { echo username=agent; echo password=planted; }; f"},
		{"-C", work, "commit", "-q", "--allow-empty", "-m", "b1"}, {"-C", work, "branch", "b1"}} {
		if out, err := gitCmd(env, args...); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	c, err := worktree.Open(ctx, work, append(env, "GITHUB_TOKEN="+tok))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Fetch(ctx, "origin"); err == nil {
		t.Fatal("a fetch with the planted helper's password went through")
	}
	net := c.WithCredential(func(context.Context) (string, string, error) { return "x-access-token", tok, nil })
	if err := net.PushBranch(ctx, "origin", "b1"); err != nil {
		t.Fatalf("push: %v", err)
	}
	if has, err := net.RemoteHasBranch(ctx, "origin", "b1"); err != nil || !has {
		t.Fatalf("ls-remote: %v %v", has, err)
	}
	if err := net.Fetch(ctx, "origin", "+refs/heads/b1:refs/remotes/origin/b1"); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if out, err := gitCmd(env, "--git-dir", origin, "rev-parse", "--verify", "-q", "b1"); err != nil {
		t.Fatalf("b1 is not on origin: %v %s", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if asked < 3 {
		t.Errorf("the fake saw %d authenticated git requests, want at least 3", asked)
	}
	if len(seen) > 0 {
		t.Errorf("the token was readable while git talked to the remote:\n%s", strings.Join(seen, "\n"))
	}
}

func gitCmd(env []string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Env = env
	return cmd.CombinedOutput()
}

// procsHolding lists the processes (not this one) whose environ or cmdline
// holds s, as an agent of the same user would read them.
func procsHolding(s string) []string {
	var out []string
	paths, _ := filepath.Glob("/proc/[0-9]*")
	self := fmt.Sprint(os.Getpid())
	for _, p := range paths {
		if filepath.Base(p) == self {
			continue
		}
		for _, f := range []string{"environ", "cmdline"} {
			b, err := os.ReadFile(filepath.Join(p, f))
			if err == nil && bytes.Contains(b, []byte(s)) {
				cmd, _ := os.ReadFile(filepath.Join(p, "cmdline"))
				out = append(out, fmt.Sprintf("%s %s: %s", p, f, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
			}
		}
	}
	return out
}
