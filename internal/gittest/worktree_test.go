package gittest

import (
	"path/filepath"
	"strings"
	"testing"
)

// A worktree Worktree links is the one `git worktree add` makes: git
// lists it on its branch, it is clean with the branch's files, its
// commits move the branch, and `git worktree remove` takes it away.
func TestWorktreeIsGits(t *testing.T) {
	dir := t.TempDir()
	env := Env(dir)
	git := Runner(t, env)
	repo := filepath.Join(dir, "r")
	git("init", "-q", "-b", "main", repo)
	git("-C", repo, "commit", "-q", "--allow-empty", "-m", "init")
	Import(t, env, repo, Commit{Ref: "auto/p1", From: "main^0", Message: "p1", Files: map[string]string{"d/f.txt": "f\n"}, Exec: []string{"d/f.txt"}})
	Import(t, env, repo, Commit{Ref: "auto/p2", From: "main^0", Message: "p2"})
	wt := filepath.Join(dir, "wts", "p1")
	Worktree(t, env, repo, wt, "auto/p1")
	// The same base name again: git's own numbering of the admin folder.
	wt2 := filepath.Join(dir, "other", "p1")
	Worktree(t, env, repo, wt2, "refs/heads/auto/p2")

	list := git("-C", repo, "worktree", "list", "--porcelain")
	for _, want := range []string{"worktree " + wt + "\nHEAD " + git("-C", repo, "rev-parse", "auto/p1") + "\nbranch refs/heads/auto/p1",
		"worktree " + wt2 + "\nHEAD " + git("-C", repo, "rev-parse", "auto/p2") + "\nbranch refs/heads/auto/p2"} {
		if !strings.Contains(list, want) {
			t.Errorf("git worktree list:\n%s\nwant it to hold:\n%s", list, want)
		}
	}
	if got := git("-C", wt2, "rev-parse", "--absolute-git-dir"); got != filepath.Join(repo, ".git", "worktrees", "p11") {
		t.Errorf("the second p1's admin folder is %s, want worktrees/p11", got)
	}
	if st := git("-C", wt, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("status of the new worktree:\n%s", st)
	}
	if got := git("-C", wt, "ls-files", "-s", "d/f.txt"); !strings.HasPrefix(got, "100755 ") {
		t.Errorf("index entry of d/f.txt: %q", got)
	}
	git("-C", wt, "commit", "-q", "--allow-empty", "-m", "in the worktree")
	if got := git("-C", repo, "log", "-1", "--format=%s", "auto/p1"); got != "in the worktree" {
		t.Errorf("auto/p1 is at %q after a commit in its worktree", got)
	}
	git("-C", repo, "worktree", "remove", wt)
	if list := git("-C", repo, "worktree", "list", "--porcelain"); strings.Contains(list, wt+"\n") {
		t.Errorf("still listed after git worktree remove:\n%s", list)
	}
}
