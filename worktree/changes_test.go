package worktree

import (
	"context"
	"os"
	"slices"
	"testing"
)

// BranchChanges reads from one diff what DiffNames and MarkerCandidates
// read from two: the same paths, named with spaces, tabs, quotes,
// backslashes and non-ASCII letters, a type change listed once, a mode
// change and an empty file too; and the files with added marker lines
// (a binary file's are not, as for git diff --check).
func TestBranchChanges(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	ctx := context.Background()
	from := commitFiles(t, c, "", "one", map[string]string{"keep.txt": "k\n", "sp ace.txt": "a\n", "link": "x\n", "mode.sh": "m\n", "gone.txt": "g\n"})
	writeFile(t, c.Dir, "sp ace.txt", "<<<<<<< ours\na\n=======\nb\n>>>>>>> theirs\n")
	writeFile(t, c.Dir, "ta\tb \"q\" \\ é.md", "Title\n=======\n")
	writeFile(t, c.Dir, "empty", "")
	writeFile(t, c.Dir, "bin.dat", "\x00\x01<<<<<<< x\n>>>>>>> y\n")
	writeFile(t, c.Dir, "deep/er/m.go", "x\n|||||||\n")
	mustGit(t, c, "", "rm", "-q", "link", "gone.txt")
	if err := os.Symlink("target", c.abs("link")); err != nil {
		t.Fatal(err)
	}
	mustGit(t, c, "", "add", "-A")
	mustGit(t, c, "", "update-index", "--chmod=+x", "mode.sh")
	mustGit(t, c, "", "commit", "-q", "-m", "two")
	to := mustGit(t, c, "", "rev-parse", "HEAD")
	got, err := c.BranchChanges(ctx, from, to)
	if err != nil {
		t.Fatal(err)
	}
	names, err := c.DiffNames(ctx, from, to)
	if err != nil {
		t.Fatal(err)
	}
	marks, err := c.MarkerCandidates(ctx, "", from, to)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	slices.Sort(got.Paths)
	if !slices.Equal(got.Paths, names) || len(names) != 8 {
		t.Errorf("paths %q, diff-tree --name-only says %q", got.Paths, names)
	}
	slices.Sort(marks)
	slices.Sort(got.Markers)
	if !slices.Equal(got.Markers, marks) || len(marks) != 3 {
		t.Errorf("marker candidates %q, diff --check says %q", got.Markers, marks)
	}
	if _, err := c.BranchChanges(ctx, from, "nosuchcommit"); err == nil {
		t.Error("a diff that cannot run is no error")
	}
	// From the merge base: what the base did since is not the branch's,
	// and the user's diff config changes nothing that is read.
	for k, v := range map[string]string{"diff.noprefix": "true", "diff.mnemonicPrefix": "true", "diff.ignoreSubmodules": "all",
		"color.ui": "always", "diff.external": "false", "diff.relative": "true", "diff.renames": "copies"} {
		mustGit(t, c, "", "config", k, v)
	}
	mustGit(t, c, "", "checkout", "-q", "-f", "-b", "side", from)
	side := commitFiles(t, c, "", "side", map[string]string{"side.txt": "<<<<<<< s\n"})
	if got, err := c.BranchChanges(ctx, to, side); err != nil || !slices.Equal(got.Paths, []string{"side.txt"}) || !slices.Equal(got.Markers, []string{"side.txt"}) {
		t.Errorf("BranchChanges(%.7s, side) = %+v, %v; want side.txt alone, marked", to, got, err)
	}
	mustGit(t, c, "", "checkout", "-q", "-f", "--orphan", "alone")
	alone := commitFiles(t, c, "", "alone", map[string]string{"a.txt": "a\n"})
	if got, err := c.BranchChanges(ctx, to, alone); err == nil {
		t.Errorf("no merge base: %+v, no error", got)
	}
}
