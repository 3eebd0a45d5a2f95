package gittest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Worktree links a new worktree at path (which must not exist) to the
// repository whose main worktree is top, checked out on branch (an
// existing branch, "auto/p1" or "refs/heads/auto/p1"), as `git worktree
// add path branch` does, in ONE git process: `worktree add` is three
// (itself, a `symbolic-ref` for the new HEAD and a `reset --hard` for
// the checkout), about a tenth of the land tests' processes. The
// linking is written as gitrepository-layout(5) describes it (the admin
// folder .git/worktrees/<name> with HEAD, commondir and gitdir; a .git
// file in path), then `git reset --hard` writes the index and the files.
// A branch checked out elsewhere is not refused as git would: the test
// must not ask for one.
func Worktree(t testing.TB, env []string, top, path, branch string) {
	t.Helper()
	abs := LinkWorktree(t, top, path, branch)
	cmd := exec.Command("git", "reset", "-q", "--hard")
	cmd.Dir, cmd.Env = abs, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gittest.Worktree %s: %v", path, fmt.Errorf("git reset --hard: %w\n%s", err, out))
	}
}

// LinkWorktree is Worktree without the checkout, and no git process: the
// worktree is registered and linked to branch, with neither an index nor
// files, for a test whose code under test never looks inside it (a
// landing reads the branch, and removes the folder). It returns path,
// absolute.
func LinkWorktree(t testing.TB, top, path, branch string) string {
	t.Helper()
	common := filepath.Join(top, ".git")
	if fi, err := os.Stat(common); err != nil || !fi.IsDir() {
		t.Fatalf("gittest.Worktree: %s is not a main worktree with a .git folder", top)
	}
	if !strings.HasPrefix(branch, "refs/") {
		branch = "refs/heads/" + branch
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	admin := filepath.Join(common, "worktrees", filepath.Base(abs))
	for i := 1; ; i++ { // git's own naming: the base name, then name1, name2...
		if _, err := os.Lstat(admin); os.IsNotExist(err) {
			break
		}
		admin = filepath.Join(common, "worktrees", filepath.Base(abs)+strconv.Itoa(i))
	}
	for _, d := range []string{admin, abs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := [][2]string{
		{filepath.Join(admin, "HEAD"), "ref: " + branch + "\n"},
		{filepath.Join(admin, "commondir"), "../..\n"},
		{filepath.Join(admin, "gitdir"), filepath.Join(abs, ".git") + "\n"},
		{filepath.Join(abs, ".git"), "gitdir: " + admin + "\n"},
	}
	for _, f := range files {
		if err := os.WriteFile(f[0], []byte(f[1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return abs
}
