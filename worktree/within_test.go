package worktree

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Within answers for a folder of the work tree what Open answers (the
// same top, the same common dir, the same locks) without a git process,
// and declines wherever git's discovery could stop elsewhere: a nested
// .git or HEAD, the .git folder itself, a folder outside (also through a
// symlink), a missing folder, GIT_CEILING_DIRECTORIES.
func TestWithin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	sub := filepath.Join(c.Dir, "a", "b")
	outside := t.TempDir()
	for _, d := range []string{sub, filepath.Join(c.Dir, "nested", "x"), filepath.Join(c.Dir, "bare", "y")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, c.Dir, "nested/.git", "gitdir: /nowhere\n")
	writeFile(t, c.Dir, "bare/HEAD", "ref: refs/heads/main\n")
	if err := os.Symlink(outside, filepath.Join(c.Dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sub, filepath.Join(c.Dir, "in")); err != nil {
		t.Fatal(err)
	}
	opened, err := Open(ctx, sub, c.Env) // the oracle: git's own answer
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{c.Dir, sub, filepath.Join(c.Dir, "in"), filepath.Join(c.Dir, "a")} {
		w, ok := c.Within(d, c.Env)
		if !ok {
			t.Errorf("Within(%s) declined", d)
			continue
		}
		common, err := w.CommonDir(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := opened.CommonDir(ctx)
		if w.Dir != opened.Dir || common != want || w.locks() != c.locks() {
			t.Errorf("Within(%s) = %s (%s), want Open's %s (%s) and c's locks", d, w.Dir, common, opened.Dir, want)
		}
	}
	for _, d := range []string{
		filepath.Join(c.Dir, "nested", "x"), filepath.Join(c.Dir, "nested"),
		filepath.Join(c.Dir, "bare", "y"), filepath.Join(c.Dir, ".git"), filepath.Join(c.Dir, ".git", "refs"),
		outside, filepath.Join(c.Dir, "out"), filepath.Join(c.Dir, "missing"), filepath.Dir(c.Dir), "a/b",
	} {
		if _, ok := c.Within(d, c.Env); ok {
			t.Errorf("Within(%s) answered; git's discovery may stop elsewhere", d)
		}
	}
	if _, ok := c.Within(sub, append(c.Env, "GIT_CEILING_DIRECTORIES="+c.Dir)); ok {
		t.Error("Within answered under GIT_CEILING_DIRECTORIES")
	}
}
