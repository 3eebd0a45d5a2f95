package worktree

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readTreeDiff answers as git diff-tree -r --no-renames --raw -z does:
// added, deleted and changed files at every depth, a mode change, a file
// become a link, a file become a folder and back, names that sort around
// a folder's ("a", "a.b", "a/"), a whole folder added and one removed.
// The base checkout's move reads it without a process (issue 25 §1).
func TestReadTreeDiffIsDiffTrees(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	old := commitFiles(t, c, "", "old", map[string]string{
		"a": "a\n", "a.b": "ab\n", "d/a/x.txt": "x\n", "d/b.txt": "b\n", "gone/deep/f": "f\n",
		"keep/k.txt": "k\n", "mode.sh": "echo\n", "link": "target\n", "file-then-dir": "f\n", "z": "z\n",
	})
	mustGit(t, c, "", "rm", "-q", "-r", "gone", "link", "file-then-dir", "a")
	if err := os.Symlink("keep/k.txt", filepath.Join(c.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(c.Dir, "mode.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	mid := commitFiles(t, c, "", "new", map[string]string{
		"a/inner": "now a folder\n", "a.b": "ab2\n", "d/a/x.txt": "x2\n", "d/a/y.txt": "y\n",
		"new/deep/n.txt": "n\n", "file-then-dir/g": "g\n", "mode.sh": "echo\n",
	})
	for _, pair := range [][2]string{{old, mid}, {mid, old}, {old, old}} {
		got, err := c.readTreeDiff(ctx, pair[0], pair[1])
		if err != nil {
			t.Fatal(err)
		}
		out := mustGit(t, c, "", "diff-tree", "-r", "--no-renames", "--raw", "-z", pair[0], pair[1])
		want := splitNUL([]byte(out))
		if !slices.Equal(got, want) {
			t.Errorf("%.7s..%.7s:\n got %q\nwant %q", pair[0], pair[1], strings.Join(got, "|"), strings.Join(want, "|"))
		}
	}
	// A gitlink is git's to diff (diff.ignoreSubmodules may hide it).
	mustGit(t, c, "", "update-index", "--add", "--cacheinfo", "160000,"+old+",sub")
	mustGit(t, c, "", "commit", "-q", "-m", "sub")
	withSub := mustGit(t, c, "", "rev-parse", "HEAD")
	if _, err := c.readTreeDiff(ctx, mid, withSub); err == nil {
		t.Error("a gitlink's change was diffed without git")
	}
}
