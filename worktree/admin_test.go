package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// CheckAdmin takes an admin folder of plain files and folders, and refuses
// a symbolic link, a hard link or a named pipe anywhere in it, naming it.
func TestCheckAdmin(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	mustGit(t, c, "", "worktree", "add", "-q", "-b", "auto/p", wt)
	admin := filepath.Join(c.Dir, ".git", "worktrees", "wt")
	if err := CheckAdmin(admin); err != nil {
		t.Fatalf("a fresh admin folder: %v", err)
	}
	outside := filepath.Join(t.TempDir(), "bashrc")
	writeFile(t, filepath.Dir(outside), "bashrc", "x\n")
	for name, plant := range map[string]func(p string) error{
		"symbolic link": func(p string) error { return os.Symlink(outside, p) },
		// An index planted as a link to a file git would make.
		"dangling symbolic link": func(p string) error { return os.Symlink(outside+".missing", p) },
		"hard link":              func(p string) error { return os.Link(outside, p) },
		"named pipe":             func(p string) error { return syscall.Mkfifo(p, 0o644) },
	} {
		p := filepath.Join(admin, "logs", "refs", "x")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := plant(p); err != nil {
			t.Fatal(err)
		}
		err := CheckAdmin(admin)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), strings.TrimPrefix(name, "dangling ")) {
			t.Errorf("%s: CheckAdmin = %v, want it named", name, err)
		}
		os.Remove(p)
	}
	// The admin folder itself replaced by a link.
	moved := admin + ".real"
	os.Rename(admin, moved)
	os.Symlink(moved, admin)
	if err := CheckAdmin(admin); err == nil {
		t.Error("an admin folder that is a symbolic link passed")
	}
}

// A merge gate in the sandbox can write its checkout's admin folder: the
// next CleanCheckout does not check out through a link planted there, it
// makes the checkout afresh.
func TestCleanCheckoutRemakesAPlantedAdminFolder(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	ctx := context.Background()
	head := mustGit(t, c, "", "rev-parse", "HEAD")
	gate := filepath.Join(c.Dir, ".claudopilot", "gate")
	if err := c.CleanCheckout(ctx, gate, head); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "bashrc")
	writeFile(t, filepath.Dir(target), "bashrc", "the user's\n")
	reflog := filepath.Join(c.Dir, ".git", "worktrees", "gate", "logs", "HEAD")
	os.MkdirAll(filepath.Dir(reflog), 0o755)
	os.Remove(reflog)
	if err := os.Symlink(target, reflog); err != nil {
		t.Fatal(err)
	}
	next := commitFiles(t, c, "", "next", map[string]string{"b.txt": "b\n"})
	if err := c.CleanCheckout(ctx, gate, next); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Dir(target), "bashrc"); got != "the user's\n" {
		t.Errorf("the checkout wrote through the planted link:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(gate, "b.txt")); err != nil {
		t.Errorf("the gate checkout does not hold the new commit: %v", err)
	}
}

// Populated names a gitlink whose checkout holds a repository, and only
// that: a gitlink with an empty folder is not populated.
func TestPopulated(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	ctx := context.Background()
	sub := filepath.Join(c.Dir, "sub")
	mustGit(t, c, "", "init", "-q", sub)
	commitFiles(t, c, sub, "sub", map[string]string{"g": "g\n"})
	mustGit(t, c, "", "update-index", "--add", "--cacheinfo", "160000,"+mustGit(t, c, sub, "rev-parse", "HEAD")+",sub")
	mustGit(t, c, "", "update-index", "--add", "--cacheinfo", "160000,"+mustGit(t, c, sub, "rev-parse", "HEAD")+",empty")
	os.MkdirAll(filepath.Join(c.Dir, "empty"), 0o755)
	got, err := c.Populated(ctx, "")
	if err != nil || len(got) != 1 || got[0] != "sub" {
		t.Errorf("Populated = %q, %v; want [sub]", got, err)
	}
}
