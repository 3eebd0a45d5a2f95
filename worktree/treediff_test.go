package worktree

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/gittest"
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
	// old and mid in one fast-import, mid then read into the index for
	// the gitlink below (commits, a git rm were 6 processes).
	ids := gittest.Import(t, c.Env, c.Dir, gittest.Commit{Ref: "main", From: "main^0", Message: "old", Files: map[string]string{
		"a": "a\n", "a.b": "ab\n", "d/a/x.txt": "x\n", "d/b.txt": "b\n", "gone/deep/f": "f\n",
		"keep/k.txt": "k\n", "mode.sh": "echo\n", "link": "target\n", "file-then-dir": "f\n", "z": "z\n",
	}}, gittest.Commit{Ref: "main", Message: "new", Delete: []string{"gone", "link", "file-then-dir", "a"}, Files: map[string]string{
		"a/inner": "now a folder\n", "a.b": "ab2\n", "d/a/x.txt": "x2\n", "d/a/y.txt": "y\n",
		"new/deep/n.txt": "n\n", "file-then-dir/g": "g\n", "mode.sh": "echo\n",
	}, Exec: []string{"mode.sh"}, Links: map[string]string{"link": "keep/k.txt"}})
	old, mid := ids[0], ids[1]
	mustGit(t, c, "", "read-tree", mid)
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
