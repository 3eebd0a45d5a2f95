package worktree

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/gittest"
)

// ReplaceFileCommit writes the commit git commit-tree writes (the same
// id, SHA-1 and SHA-256; fixed dates and the time now alike) in the same
// unpack-objects as the flip: after the run's one git var -l, no
// commit-tree process (issue 25 §1).
func TestReplaceFileCommitIsCommitTrees(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"sha1", "sha256"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			cmd := exec.Command("git", "init", "-q", "--object-format="+format, "-b", "main", dir)
			cmd.Env = testEnv()
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Skipf("git init --object-format=%s: %v %s", format, err, out)
			}
			c, err := Open(ctx, dir, testEnv())
			if err != nil {
				t.Fatal(err)
			}
			// Both parents in one fast-import (nothing reads a checkout;
			// two commits were 4 processes).
			ids := gittest.Import(t, c.Env, c.Dir,
				gittest.Commit{Ref: "main", Message: "files", Files: map[string]string{"roadmap/M.md": "a\n", "top.txt": "t\n"}},
				gittest.Commit{Ref: "main", Message: "side", Files: map[string]string{"top.txt": "side\n"}})
			head, side := ids[0], ids[1]
			trace := filepath.Join(t.TempDir(), "trace")
			traced := c.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
			for i, msg := range []string{"Merge p1: first", "Merge p2: second\n\nClaudopilot-Lanes: worker 1 claude\n"} {
				tree, commit, err := traced.ReplaceFileCommit(ctx, head, "roadmap/M.md", []byte("flipped "+msg), []string{head, side}, msg)
				if err != nil {
					t.Fatal(err)
				}
				if want, err := c.CommitTree(ctx, tree, []string{head, side}, msg); err != nil || commit != want {
					t.Errorf("#%d: commit %s, commit-tree writes %s (%v)", i, commit, want, err)
				}
			}
			b, _ := os.ReadFile(trace)
			if n := strings.Count(string(b), "built-in: git var -l"); n != 1 {
				t.Errorf("git var -l ran %d times for two commits, want once", n)
			}
			if strings.Contains(string(b), "built-in: git commit-tree") || strings.Count(string(b), "built-in: git unpack-objects") != 2 {
				t.Errorf("want one unpack-objects per commit and no commit-tree:\n%s", b)
			}

			// Without GIT_*_DATE the commit is made now: commit-tree given
			// the same second writes the same commit.
			var env []string
			for _, kv := range testEnv() {
				if !strings.HasPrefix(kv, "GIT_AUTHOR_DATE=") && !strings.HasPrefix(kv, "GIT_COMMITTER_DATE=") {
					env = append(env, kv)
				}
			}
			now := c.WithEnv(env)
			tree, commit, err := now.ReplaceFileCommit(ctx, head, "roadmap/M.md", []byte("now\n"), []string{head}, "Merge p3: now")
			if err != nil {
				t.Fatal(err)
			}
			raw := mustGit(t, c, "", "cat-file", "commit", commit)
			_, date, _ := strings.Cut(strings.SplitN(raw, "\n", 5)[3], "> ")
			fixed := c.WithEnv(append(env, "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date))
			if want, err := fixed.CommitTree(ctx, tree, []string{head}, "Merge p3: now"); err != nil || commit != want {
				t.Errorf("commit made now:\n%s\ncommit-tree at %q writes %s (%v)", raw, date, want, err)
			}
		})
	}
}

// Where commit-tree might write another commit than the one built here,
// commit-tree writes it: with commit.gpgSign set (git 2.39's commit-tree
// ignores it, a later one might sign), and for a message that is not
// UTF-8 (git's to mend).
func TestReplaceFileCommitLeavesOddCasesToGit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	head := mustGit(t, c, "", "rev-parse", "HEAD")
	msg := "Merge p1: caf\xe9"
	tree, commit, err := c.ReplaceFileCommit(ctx, head, "README.md", []byte("x\n"), []string{head}, msg)
	if err != nil {
		t.Fatal(err)
	}
	if want, err := c.CommitTree(ctx, tree, []string{head}, msg); err != nil || commit != want {
		t.Errorf("a Latin-1 message: commit %s, commit-tree writes %s (%v)", commit, want, err)
	}

	signed := newRepo(t)
	mustGit(t, signed, "", "config", "commit.gpgSign", "true")
	head = mustGit(t, signed, "", "rev-parse", "HEAD")
	trace := filepath.Join(t.TempDir(), "trace")
	traced := signed.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	if _, _, err := traced.ReplaceFileCommit(ctx, head, "README.md", []byte("x\n"), []string{head}, "Merge p1: x"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(trace); !strings.Contains(string(b), "built-in: git commit-tree") {
		t.Errorf("with commit.gpgSign the commit was not commit-tree's:\n%s", b)
	}
}

// The engine's start-up check of the identity (HasIdentity) is answered by
// the run's git var -l, which the merges read anyway: one process, not the
// two strict git var's (issue 25 §1); a missing identity is still asked.
func TestHasIdentityReadsTheRunsIdent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	trace := filepath.Join(t.TempDir(), "trace")
	traced := c.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	if ok, err := traced.HasIdentity(ctx); err != nil || !ok {
		t.Fatalf("HasIdentity = %v, %v", ok, err)
	}
	head := mustGit(t, c, "", "rev-parse", "HEAD")
	if _, _, err := traced.ReplaceFileCommit(ctx, head, "README.md", []byte("x\n"), []string{head}, "Merge p1: x"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(trace)
	if n := strings.Count(string(b), "built-in: git "); n != 3 || !strings.Contains(string(b), "git var -l") {
		t.Errorf("want git var -l, cat-file and unpack-objects, got %d processes:\n%s", n, b)
	}
}
