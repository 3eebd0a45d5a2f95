package worktree

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/gittest"
)

// testEnv is the process environment without any GIT_* variable, plus an
// isolated config and a fixed identity and date, so tests neither read nor
// depend on the machine's git configuration.
func testEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	env = append(env, gittest.NoAutoMaintenance()...)
	return append(env,
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test Author",
		"GIT_AUTHOR_EMAIL=author@example.com",
		"GIT_COMMITTER_NAME=Test Committer",
		"GIT_COMMITTER_EMAIL=committer@example.com",
		"GIT_AUTHOR_DATE=2024-01-02T03:04:05Z",
		"GIT_COMMITTER_DATE=2024-01-02T03:04:05Z",
	)
}

// newRepo creates a repository with branch main and one commit (README.md)
// in a temp dir and returns a Client for it. The repository is a copy
// of one made once per test binary (the dates are fixed: the commit is
// the same): `git init`, `add` and `commit` were three processes a test.
func newRepo(t *testing.T) *Client {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := filepath.Join(t.TempDir(), "repo")
	env := testEnv()
	templates.Copy(t, "repo", dir, func(dir string) error {
		cmd := exec.Command("sh", "-c", `git init -q -b main "$1" && cd "$1" && echo hello > README.md && git add -A && git commit -q -m initial`, "sh", dir)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%w\n%s", err, out)
		}
		return nil
	})
	// Known, not Open's rev-parse (a git process in each of ~80 tests):
	// the top is the copy's folder (its real path, as git prints it) and
	// the common dir its .git. TestOpen checks that Open finds the same
	// from a subfolder.
	top, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := Known(top, filepath.Join(top, ".git"), env)
	// The long-lived cat-file a test's reads start ends with the test,
	// before its folder goes.
	t.Cleanup(c.Close)
	return c
}

// templates holds newRepo's repository, made once per test binary.
var templates *gittest.Templates

func TestMain(m *testing.M) {
	gittest.RunWithTemplates(m, "worktree-templates-", func(t *gittest.Templates) { templates = t })
}

// mustGit runs git in dir ("" = c.Dir) and fails the test on error.
func mustGit(t *testing.T, c *Client, dir string, args ...string) string {
	t.Helper()
	out, err := c.GitIn(context.Background(), dir, args...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return out
}

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// commitFiles writes files in worktree dir, commits everything with msg and
// returns the new HEAD.
func commitFiles(t *testing.T, c *Client, dir, msg string, files map[string]string) string {
	t.Helper()
	for p, content := range files {
		writeFile(t, c.abs(dir), p, content)
	}
	mustGit(t, c, dir, "add", "-A")
	mustGit(t, c, dir, "commit", "-q", "-m", msg)
	if h, ok := gittest.Head(c.abs(dir)); ok {
		return h
	}
	return mustGit(t, c, dir, "rev-parse", "HEAD")
}
