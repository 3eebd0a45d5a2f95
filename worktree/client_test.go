package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/gittest"
)

var shaRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// TestOpenIsOneGit: opening a client (every command of the CLI does)
// starts one git process, and the common dir is known without another.
func TestOpenIsOneGit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	trace := filepath.Join(t.TempDir(), "trace")
	o, err := Open(ctx, c.Dir, append(testEnv(), "GIT_TRACE="+trace))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.CommonDir(ctx); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(trace)
	if n := strings.Count(string(b), "trace: built-in: git "); n != 1 {
		t.Errorf("%d git processes, want 1:\n%s", n, b)
	}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)

	sub := filepath.Join(c.Dir, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	c2, err := Open(ctx, sub, c.Env)
	if err != nil {
		t.Fatal(err)
	}
	if c2.Dir != c.Dir {
		t.Errorf("Open(subdir).Dir = %q, want %q", c2.Dir, c.Dir)
	}
	common, err := c2.CommonDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(c.Dir, ".git"); common != want {
		t.Errorf("CommonDir = %q, want %q", common, want)
	}

	// Not a repository: keep git from walking up past the temp dir.
	plain := t.TempDir()
	env := append(testEnv(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(plain))
	if _, err := Open(ctx, plain, env); !errors.Is(err, ErrNotRepo) {
		t.Errorf("Open(non-repo) = %v, want ErrNotRepo", err)
	}
	if _, err := Open(ctx, filepath.Join(c.Dir, ".git"), c.Env); !errors.Is(err, ErrNotRepo) {
		t.Errorf("Open(.git) = %v, want ErrNotRepo", err)
	}
	_, err = Open(ctx, filepath.Join(plain, "missing"), env)
	if err == nil || errors.Is(err, ErrNotRepo) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing) = %v, want a not-exist error", err)
	}
}

func TestGitErrorAndRunners(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)

	_, err := c.Git(ctx, "rev-parse", "--verify", "no-such-rev")
	var ge *GitError
	if !errors.As(err, &ge) {
		t.Fatalf("err = %T %v, want *GitError", err, err)
	}
	if ge.ExitCode != 128 || !strings.Contains(ge.Stderr, "fatal") {
		t.Errorf("GitError = %+v", ge)
	}
	if msg := ge.Error(); !strings.HasPrefix(msg, "git rev-parse --verify no-such-rev: exit 128: fatal: ") || strings.Contains(msg, "\n") {
		t.Errorf("Error() = %q", msg)
	}

	out, err := c.GitInput(ctx, "", []byte("blob content\n"), "hash-object", "--stdin")
	if err != nil || !shaRE.MatchString(out) {
		t.Errorf("GitInput hash-object = %q, %v", out, err)
	}
	if out, err := c.GitIn(ctx, c.Dir, "rev-parse", "--show-toplevel"); err != nil || out != c.Dir {
		t.Errorf("GitIn = %q, %v", out, err)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = c.Git(cctx, "status")
	if !errors.Is(err, context.Canceled) || !errors.As(err, &ge) {
		t.Errorf("cancelled Git = %v, want *GitError wrapping context.Canceled", err)
	}

	// Variables that would redirect git elsewhere are scrubbed.
	c2 := &Client{Dir: c.Dir, Env: append(testEnv(), "GIT_DIR=/nonexistent", "GIT_INDEX_FILE=/nonexistent/index")}
	if _, err := c2.Git(ctx, "status", "--porcelain"); err != nil {
		t.Errorf("status with GIT_DIR in Env: %v", err)
	}
}

func TestCurrentBranchRevParseBranchExists(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)

	if b, err := c.CurrentBranch(ctx); err != nil || b != "main" {
		t.Errorf("CurrentBranch = %q, %v", b, err)
	}
	head, err := c.RevParse(ctx, "HEAD")
	if err != nil || !shaRE.MatchString(head) {
		t.Fatalf("RevParse(HEAD) = %q, %v", head, err)
	}
	if sha, err := c.RevParse(ctx, "main"); err != nil || sha != head {
		t.Errorf("RevParse(main) = %q, %v", sha, err)
	}
	tree, err := c.RevParse(ctx, "HEAD^{tree}")
	if err != nil || tree == head || tree != mustGit(t, c, "", "rev-parse", "HEAD^{tree}") {
		t.Errorf("RevParse(HEAD^{tree}) = %q, %v", tree, err)
	}
	for _, rev := range []string{"nope", "HEAD~3", "--all"} {
		if _, err := c.RevParse(ctx, rev); !errors.Is(err, ErrNoRev) {
			t.Errorf("RevParse(%q) = %v, want ErrNoRev", rev, err)
		}
	}
	// A tree id is not a commit.
	if _, err := c.RevParse(ctx, tree); !errors.Is(err, ErrNoRev) {
		t.Errorf("RevParse(tree) = %v, want ErrNoRev", err)
	}

	mustGit(t, c, "", "branch", "feature")
	for name, want := range map[string]bool{"feature": true, "refs/heads/feature": true, "main": true, "nope": false, "": false} {
		if got, err := c.BranchExists(ctx, name); err != nil || got != want {
			t.Errorf("BranchExists(%q) = %v, %v; want %v", name, got, err, want)
		}
	}

	mustGit(t, c, "", "checkout", "-q", "--detach")
	if b, err := c.CurrentBranch(ctx); err != nil || b != "" {
		t.Errorf("detached CurrentBranch = %q, %v", b, err)
	}
}

func TestHasIdentity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	if ok, err := c.HasIdentity(ctx); err != nil || !ok {
		t.Errorf("HasIdentity with env identity = %v, %v", ok, err)
	}

	var bare []string
	for _, kv := range c.Env {
		if !strings.HasPrefix(kv, "GIT_AUTHOR_") && !strings.HasPrefix(kv, "GIT_COMMITTER_") {
			bare = append(bare, kv)
		}
	}
	// Only EMAIL-less, config-less env: git could guess from the host, but
	// that does not count.
	bare = append(bare, "EMAIL=")
	noID := &Client{Dir: c.Dir, Env: bare}
	if ok, err := noID.HasIdentity(ctx); err != nil || ok {
		t.Errorf("HasIdentity without identity = %v, %v", ok, err)
	}

	// Committer only is not enough.
	half := &Client{Dir: c.Dir, Env: append(bare[:len(bare):len(bare)], "GIT_COMMITTER_NAME=C", "GIT_COMMITTER_EMAIL=c@example.com")}
	if ok, err := half.HasIdentity(ctx); err != nil || ok {
		t.Errorf("HasIdentity committer only = %v, %v", ok, err)
	}

	// Repository config counts.
	mustGit(t, c, "", "config", "user.name", "Config User")
	mustGit(t, c, "", "config", "user.email", "config@example.com")
	if ok, err := noID.HasIdentity(ctx); err != nil || !ok {
		t.Errorf("HasIdentity with config identity = %v, %v", ok, err)
	}
}

func TestExclude(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	common, err := c.CommonDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(common, "info", "exclude")
	// Start without the info directory at all, and with a .gitignore.
	if err := os.RemoveAll(filepath.Join(common, "info")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, c.Dir, ".gitignore", "*.log")
	for range 3 {
		for _, p := range []string{".claudopilot/", "*.tmp"} {
			if err := c.Exclude(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := readFile(t, common, "info/exclude"); got != ".claudopilot/\n*.tmp\n" {
		t.Errorf("exclude = %q", got)
	}
	if got := readFile(t, c.Dir, ".gitignore"); got != "*.log" {
		t.Errorf(".gitignore changed: %q", got)
	}
	// A file without trailing newline gets one before the new line.
	if err := os.WriteFile(file, []byte("# comment\nfoo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Exclude(ctx, "bar"); err != nil {
		t.Fatal(err)
	}
	if err := c.Exclude(ctx, "foo"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, common, "info/exclude"); got != "# comment\nfoo\nbar\n" {
		t.Errorf("exclude = %q", got)
	}
	// The pattern takes effect, for linked worktrees too.
	writeFile(t, c.Dir, "foo", "")
	writeFile(t, c.Dir, "bar", "")
	if dirty, err := c.Dirty(ctx, ""); err != nil || len(dirty) != 1 || dirty[0] != ".gitignore" {
		t.Errorf("Dirty = %q, %v; want only .gitignore", dirty, err)
	}
	if err := c.Exclude(ctx, "a\nb"); err == nil {
		t.Error("Exclude with newline: no error")
	}
}

// The driver's git gets no variable whose name says it holds a secret,
// whatever environment the client was given (the driver's has GITHUB_TOKEN,
// an agent's the CLI's key): any process of the same user reads a git's
// /proc/<pid>/environ. A shell alias prints what git itself got.
func TestDriverGitGetsNoSecrets(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	c = c.WithEnv(append(testEnv(), "GITHUB_TOKEN=ghp_x", "GH_TOKEN=y", "NPM_TOKEN=n", "ANTHROPIC_API_KEY=k", "LANE_a_CREDENTIALS=/p", "PLAIN=1"))
	out := mustGit(t, c, "", "-c", "alias.envdump=!env", "envdump")
	for _, k := range []string{"GITHUB_TOKEN=", "GH_TOKEN=", "NPM_TOKEN=", "ANTHROPIC_API_KEY="} {
		if strings.Contains(out, k) {
			t.Errorf("git got %s", k)
		}
	}
	for _, k := range []string{"PLAIN=1", "LANE_a_CREDENTIALS=/p"} {
		if !strings.Contains(out, k) {
			t.Errorf("git lost %s", k)
		}
	}
}

// CurrentBranch reads HEAD from its file where git wrote it as a branch
// or a detached id, in the main worktree and in a linked one, without a
// git process; any other HEAD is git's answer (symbolic-ref, the oracle).
func TestCurrentBranchReadsTheHeadFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	linked := filepath.Join(t.TempDir(), "linked")
	gittest.LinkWorktree(t, c.Dir, linked, "main")
	trace := filepath.Join(t.TempDir(), "trace")
	tc := c.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	lc := Known(linked, filepath.Join(c.Dir, ".git"), tc.Env)
	admin := filepath.Join(c.Dir, ".git", "worktrees", "linked")
	id := strings.Repeat("ab", 20)
	for _, h := range []struct {
		cl                 *Client
		gitDir, head, want string
	}{
		{tc, filepath.Join(c.Dir, ".git"), "ref: refs/heads/main\n", "main"},
		{tc, filepath.Join(c.Dir, ".git"), "ref: refs/heads/auto/p-1.2_x\n", "auto/p-1.2_x"},
		{tc, filepath.Join(c.Dir, ".git"), id + "\n", ""},
		{lc, admin, "ref: refs/heads/feature\n", "feature"},
		{lc, admin, id + "\n", ""},
	} {
		if err := os.WriteFile(filepath.Join(h.gitDir, "HEAD"), []byte(h.head), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(trace, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err := h.cl.CurrentBranch(ctx); err != nil || b != h.want {
			t.Errorf("HEAD %q: CurrentBranch = %q, %v; want %q", h.head, b, err, h.want)
		}
		if b, _ := os.ReadFile(trace); len(b) > 0 {
			t.Errorf("HEAD %q: CurrentBranch ran git:\n%s", h.head, b)
		}
	}
	// Anything else: git's answer.
	for _, head := range []string{"ref: refs/remotes/origin/x\n", "ref: refs/heads/a..b\n", "ref: refs/heads/main", "ref: refs/heads/.x\n", "ref: refs/heads/-x\n", strings.ToUpper(id) + "\n"} {
		if err := os.WriteFile(filepath.Join(c.Dir, ".git", "HEAD"), []byte(head), 0o644); err != nil {
			t.Fatal(err)
		}
		out, gerr := c.run(ctx, "", nil, nil, "symbolic-ref", "-q", "HEAD")
		want := strings.TrimPrefix(trimNL(out), "refs/heads/")
		if exitCode(gerr) == 1 {
			want, gerr = "", nil // detached
		}
		got, err := c.CurrentBranch(ctx)
		if got != want || (err == nil) != (gerr == nil) {
			t.Errorf("HEAD %q: CurrentBranch = %q, %v; git says %q, %v", head, got, err, want, gerr)
		}
	}
}
