// Package gittest sets up real git repositories for the command tests that
// run claudopilot against the fake GitHub: the environment that keeps the
// user's git configuration out, a git runner that fails the test, and a
// bare origin with a first commit pushed to the branches a test names.
// Only tests import it.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Env is git's environment for a test whose home is home: no global or
// system configuration, a fixed identity.
func Env(home string) []string {
	return []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x"}
}

// Runner runs git with env and returns its trimmed output; a failure
// fails the test.
func Runner(t testing.TB, env []string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
}

// Origin makes dir/origin.git (bare, branch main) and its clone dir/work
// with one commit (README.md), pushed to main and to each of branches.
func Origin(t testing.TB, dir string, env []string, branches ...string) (origin, work string) {
	t.Helper()
	git := Runner(t, env)
	origin, work = filepath.Join(dir, "origin.git"), filepath.Join(dir, "work")
	git("init", "-q", "--bare", "-b", "main", origin)
	git("clone", "-q", origin, work)
	if err := os.WriteFile(filepath.Join(work, "README.md"), []byte("# w\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("-C", work, "add", "-A")
	git("-C", work, "commit", "-qm", "init")
	push := []string{"-C", work, "push", "-q", "origin", "main"}
	for _, b := range branches {
		push = append(push, "main:"+b)
	}
	git(push...)
	return origin, work
}
