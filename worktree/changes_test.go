package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/claudopilot/claudopilot/internal/gittest"
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
	// The branch's commits (and, below, side's and alone's) in one
	// fast-import: nothing here reads the checkout (commits, checkouts, a
	// git rm, a chmod and the config's seven values were 21 processes).
	ids := gittest.Import(t, c.Env, c.Dir,
		gittest.Commit{Ref: "main", From: "main^0", Message: "one", Files: map[string]string{"keep.txt": "k\n", "sp ace.txt": "a\n", "link": "x\n", "mode.sh": "m\n", "gone.txt": "g\n"}},
		gittest.Commit{Ref: "main", Message: "two", Delete: []string{"link", "gone.txt"}, Files: map[string]string{
			"sp ace.txt":          "<<<<<<< ours\na\n=======\nb\n>>>>>>> theirs\n",
			"ta\tb \"q\" \\ é.md": "Title\n=======\n",
			"empty":               "",
			"bin.dat":             "\x00\x01<<<<<<< x\n>>>>>>> y\n",
			"deep/er/m.go":        "x\n|||||||\n",
			"mode.sh":             "m\n",
		}, Exec: []string{"mode.sh"}, Links: map[string]string{"link": "target"}},
		gittest.Commit{Ref: "side", From: ":1", Message: "side", Files: map[string]string{"side.txt": "<<<<<<< s\n"}},
		gittest.Commit{Ref: "alone", Message: "alone", Files: map[string]string{"a.txt": "a\n"}})
	from, to, side, alone := ids[0], ids[1], ids[2], ids[3]
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
	// and the user's diff config (appended to the repository's config
	// as `git config` writes it) changes nothing that is read.
	cf, err := os.OpenFile(filepath.Join(c.Dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = cf.WriteString("[diff]\n\tnoprefix = true\n\tmnemonicPrefix = true\n\tignoreSubmodules = all\n" +
			"\texternal = false\n\trelative = true\n\trenames = copies\n[color]\n\tui = always\n")
		err = errors.Join(err, cf.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.BranchChanges(ctx, to, side); err != nil || !slices.Equal(got.Paths, []string{"side.txt"}) || !slices.Equal(got.Markers, []string{"side.txt"}) {
		t.Errorf("BranchChanges(%.7s, side) = %+v, %v; want side.txt alone, marked", to, got, err)
	}
	if got, err := c.BranchChanges(ctx, to, alone); err == nil {
		t.Errorf("no merge base: %+v, no error", got)
	}
}
