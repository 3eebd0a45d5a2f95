package gittest

import (
	"path/filepath"
	"strings"
	"testing"
)

// A template's linked worktree is its copy's own in the copy: listed at
// the copy's path, its commits on the copy's branch, the template's
// branch unmoved.
func TestCopyRelinksWorktrees(t *testing.T) {
	dir := t.TempDir()
	env := Env(dir)
	git := Runner(t, env)
	ts := NewTemplates(filepath.Join(dir, "templates"))
	var tmpl string
	build := func(repo string) error {
		tmpl = repo
		git("init", "-q", "-b", "main", repo)
		git("-C", repo, "commit", "-q", "--allow-empty", "-m", "init")
		git("-C", repo, "worktree", "add", "-q", "-b", "auto/p1", filepath.Join(repo, "wt", "p1"), "main")
		return nil
	}
	ts.Copy(t, "repo", filepath.Join(dir, "a"), build)
	a := filepath.Join(dir, "a")
	wt := filepath.Join(a, "wt", "p1")
	if got := git("-C", wt, "rev-parse", "--absolute-git-dir"); got != filepath.Join(a, ".git", "worktrees", "p1") {
		t.Errorf("the copy's worktree's git dir is %s", got)
	}
	git("-C", wt, "commit", "-q", "--allow-empty", "-m", "in the copy")
	if got := git("-C", a, "log", "-1", "--format=%s", "auto/p1"); got != "in the copy" {
		t.Errorf("the copy's auto/p1 is at %q", got)
	}
	if got := git("-C", tmpl, "log", "-1", "--format=%s", "auto/p1"); got != "init" {
		t.Errorf("the template's auto/p1 moved to %q", got)
	}
	if list := git("-C", a, "worktree", "list", "--porcelain"); !strings.Contains(list, "worktree "+wt+"\n") || strings.Contains(list, tmpl) {
		t.Errorf("the copy's worktrees:\n%s", list)
	}
}
