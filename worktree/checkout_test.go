package worktree

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/claudopilot/claudopilot/internal/gittest"
)

// mergeSetup builds main (checked out in c.Dir) with a.txt, b.txt and
// MANIFEST.md, a task branch changing a.txt and adding new/c.txt, and a
// merge commit of both with the manifest flipped. main is NOT moved. It
// returns the old main and the merge commit.
func mergeSetup(t *testing.T, c *Client, taskFiles map[string]string) (oldSHA, newSHA string) {
	t.Helper()
	if taskFiles == nil {
		taskFiles = map[string]string{"a.txt": "a from task\n", "new/c.txt": "c\n"}
	}
	// The three commits are one fast-import and main's checkout follows
	// by a reset: no test reads the task's checkout, and the merge's
	// tree is main's with the task's files (which only add or change
	// files) and the flipped manifest, as a merge of the two writes it
	// (a commit, a worktree add, a merge-tree, a ReplaceFiles and a
	// commit-tree were 10 processes; TestMergeCommitFlow builds one so).
	merged := map[string]string{"MANIFEST.md": "- [x] task\n"}
	for p, content := range taskFiles {
		merged[p] = content
	}
	ids := gittest.Import(t, c.Env, c.Dir,
		gittest.Commit{Ref: "main", From: "main^0", Message: "base", Files: map[string]string{"a.txt": "a\n", "b.txt": "b\n", "MANIFEST.md": "- [ ] task\n"}},
		gittest.Commit{Ref: "task", From: ":1", Message: "task", Files: taskFiles},
		gittest.Commit{Ref: "refs/merged/task", From: ":1", Merge: []string{":2"}, Message: "Merge task", Files: merged})
	mustGit(t, c, "", "reset", "-q", "--hard")
	return ids[0], ids[2]
}

func moveMain(t *testing.T, c *Client, oldSHA, newSHA string) {
	t.Helper()
	if err := c.UpdateRef(context.Background(), "refs/heads/main", newSHA, oldSHA); err != nil {
		t.Fatal(err)
	}
}

func TestAdvanceCheckout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	oldSHA, newSHA := mergeSetup(t, c, nil)

	// The user edits an unrelated file and has an untracked one; the live
	// manifest is dirty; a.txt is merely stat-dirty (same content, new mtime).
	writeFile(t, c.Dir, "b.txt", "b edited by user\n")
	writeFile(t, c.Dir, "notes.txt", "user notes\n")
	writeFile(t, c.Dir, "MANIFEST.md", "- [~] task (live)\n")
	writeFile(t, c.Dir, "a.txt", "a\n")
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(c.Dir, "a.txt"), future, future); err != nil {
		t.Fatal(err)
	}

	moveMain(t, c, oldSHA, newSHA)
	over, err := c.WouldOverwrite(ctx, c.Dir, oldSHA, newSHA)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(over, []string{"MANIFEST.md"}) {
		t.Errorf("WouldOverwrite = %q, want only the skipped manifest", over)
	}
	if err := c.AdvanceCheckout(ctx, c.Dir, oldSHA, newSHA, []string{"MANIFEST.md"}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		"a.txt":       "a from task\n",       // moved forward
		"new/c.txt":   "c\n",                 // added
		"b.txt":       "b edited by user\n",  // user edit survives
		"notes.txt":   "user notes\n",        // untracked survives
		"MANIFEST.md": "- [~] task (live)\n", // never written
	} {
		if got := readFile(t, c.Dir, p); got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
	if d, err := c.Dirty(ctx, ""); err != nil || !slices.Equal(d, []string{"MANIFEST.md", "b.txt", "notes.txt"}) {
		t.Errorf("Dirty after advance = %q, %v", d, err)
	}
	// Index == new HEAD, the skipped manifest's entry included.
	if staged := mustGit(t, c, "", "diff", "--cached", "--name-only"); staged != "" {
		t.Errorf("staged after advance: %q", staged)
	}
	if b, _ := c.CurrentBranch(ctx); b != "main" {
		t.Errorf("branch = %q", b)
	}
}

// WouldOverwrite names what a merge would clobber, the same before and
// after the branch ref moves; once those changes are gone the checkout
// advances, and a skipped file keeps its bytes and mode.
func TestWouldOverwrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	oldSHA, newSHA := mergeSetup(t, c, nil)

	writeFile(t, c.Dir, "a.txt", "a edited by user\n") // the merge changes a.txt
	writeFile(t, c.Dir, "MANIFEST.md", "- [~] task (live)\n")
	if err := os.Chmod(filepath.Join(c.Dir, "MANIFEST.md"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, c.Dir, "new/c.txt", "untracked in the way\n")

	want := []string{"MANIFEST.md", "a.txt", "new/c.txt"}
	over, err := c.WouldOverwrite(ctx, c.Dir, oldSHA, newSHA)
	if err != nil || !slices.Equal(over, want) {
		t.Errorf("WouldOverwrite before move = %q, %v; want %q", over, err, want)
	}
	moveMain(t, c, oldSHA, newSHA)
	over, err = c.WouldOverwrite(ctx, c.Dir, oldSHA, newSHA)
	if err != nil || !slices.Equal(over, want) {
		t.Errorf("WouldOverwrite = %q, %v; want %q", over, err, want)
	}

	if err := os.Remove(filepath.Join(c.Dir, "new/c.txt")); err != nil {
		t.Fatal(err)
	}
	mustGit(t, c, "", "checkout", oldSHA, "--", "a.txt")
	if over, err := c.WouldOverwrite(ctx, c.Dir, oldSHA, newSHA); err != nil || !slices.Equal(over, []string{"MANIFEST.md"}) {
		t.Errorf("WouldOverwrite after cleanup = %q, %v", over, err)
	}
	if err := c.AdvanceCheckout(ctx, c.Dir, oldSHA, newSHA, []string{"MANIFEST.md"}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, c.Dir, "MANIFEST.md"); got != "- [~] task (live)\n" {
		t.Errorf("MANIFEST.md = %q", got)
	}
	if st, err := os.Stat(filepath.Join(c.Dir, "MANIFEST.md")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("MANIFEST.md mode = %v, %v", st.Mode(), err)
	}
	if got := readFile(t, c.Dir, "a.txt"); got != "a from task\n" {
		t.Errorf("a.txt = %q", got)
	}
}

// Skipped files are never written, whether the commit adds them, changes
// them, or never had them; their index entries still move.
func TestAdvanceCheckoutSkipAddedAndStaged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	oldSHA, newSHA := mergeSetup(t, c, map[string]string{"STATE.md": "state from task\n"})
	writeFile(t, c.Dir, "STATE.md", "live state\n")
	writeFile(t, c.Dir, "MANIFEST.md", "- [~] staged live\n")
	mustGit(t, c, "", "add", "MANIFEST.md")
	moveMain(t, c, oldSHA, newSHA)

	if err := c.AdvanceCheckout(ctx, c.Dir, oldSHA, newSHA, []string{"STATE.md", "MANIFEST.md", "never-existed.md"}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, c.Dir, "STATE.md"); got != "live state\n" {
		t.Errorf("STATE.md = %q", got)
	}
	if got := readFile(t, c.Dir, "MANIFEST.md"); got != "- [~] staged live\n" {
		t.Errorf("MANIFEST.md = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(c.Dir, "never-existed.md")); !os.IsNotExist(err) {
		t.Errorf("never-existed.md: %v", err)
	}
	if staged := mustGit(t, c, "", "diff", "--cached", "--name-only"); staged != "" {
		t.Errorf("index differs from the new commit: %q", staged)
	}
}

// Like git merge, the advance replaces an ignored file that the new commit
// adds; WouldOverwrite does not report it.
func TestAdvanceCheckoutIgnoredFileInTheWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	oldSHA, newSHA := mergeSetup(t, c, map[string]string{"gen.out": "committed\n"})
	if err := c.Exclude(ctx, "*.out"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, c.Dir, "gen.out", "local build output\n")
	moveMain(t, c, oldSHA, newSHA)

	over, err := c.WouldOverwrite(ctx, c.Dir, oldSHA, newSHA)
	if err != nil || len(over) != 0 {
		t.Errorf("WouldOverwrite = %q, %v; want none", over, err)
	}
	if err := c.AdvanceCheckout(ctx, c.Dir, oldSHA, newSHA, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, c.Dir, "gen.out"); got != "committed\n" {
		t.Errorf("gen.out = %q", got)
	}
}

// In a linked worktree: an untracked folder where the commit puts a file is
// reported; once gone, the file arrives. A later commit deleting files
// removes them and the folder they emptied.
func TestAdvanceCheckoutLinkedWorktreeAndDeletions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	oldSHA, newSHA := mergeSetup(t, c, map[string]string{"tool": "a file now\n", "new/c.txt": "c\n"})
	wt := filepath.Join(t.TempDir(), "other")
	if err := c.AddWorktree(ctx, wt, "other", oldSHA); err != nil {
		t.Fatal(err)
	}
	writeFile(t, wt, "tool/readme", "untracked dir\n")
	if err := c.UpdateRef(ctx, "refs/heads/other", newSHA, oldSHA); err != nil {
		t.Fatal(err)
	}
	over, err := c.WouldOverwrite(ctx, wt, oldSHA, newSHA)
	if err != nil || !slices.Equal(over, []string{"tool/readme"}) {
		t.Errorf("WouldOverwrite = %q, %v", over, err)
	}
	if err := os.RemoveAll(filepath.Join(wt, "tool")); err != nil {
		t.Fatal(err)
	}
	if err := c.AdvanceCheckout(ctx, wt, oldSHA, newSHA, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, wt, "tool"); got != "a file now\n" {
		t.Errorf("tool = %q", got)
	}
	if d, _ := c.Dirty(ctx, wt); len(d) != 0 {
		t.Errorf("Dirty = %q", d)
	}

	tree := mustGit(t, c, "", "rev-parse", newSHA+"^{tree}")
	tree, err = c.ReplaceFiles(ctx, tree, nil, []string{"new/c.txt", "tool"})
	if err != nil {
		t.Fatal(err)
	}
	del, err := c.CommitTree(ctx, tree, []string{newSHA}, "delete")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.UpdateRef(ctx, "refs/heads/other", del, newSHA); err != nil {
		t.Fatal(err)
	}
	if err := c.AdvanceCheckout(ctx, wt, newSHA, del, nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"tool", "new/c.txt", "new"} {
		if _, err := os.Lstat(filepath.Join(wt, p)); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", p, err)
		}
	}
	if d, _ := c.Dirty(ctx, wt); len(d) != 0 {
		t.Errorf("Dirty = %q", d)
	}
}

// A phase doc renamed to DONE_ on the branch must never be missing from
// the base checkout while the checkout advances: the loop re-validates the
// manifest against the folder at any moment, and a doc missing for an
// instant made a human's edit saved then "ignored: phase has no doc". The
// kernel reports the folder's changes in order, so the new name must be
// created before the old one is removed. A file replaced by a folder (and
// the reverse) still works: that deletion has to come first.
func TestAdvanceCheckoutWritesBeforeDeleting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	// Both commits in one fast-import, main's checkout at the first by a
	// reset (two commits, a git mv and a git rm were 7 processes).
	ids := gittest.Import(t, c.Env, c.Dir, gittest.Commit{Ref: "main", From: "main^0", Message: "base", Files: map[string]string{
		"rm/phase-1.md": "# p1\n", "rm/x": "a file\n", "rm/y/z": "in a folder\n",
		"rm/keep": "keeps the watched folder alive\n",
	}}, gittest.Commit{Ref: "refs/done/p1", From: ":1", Message: "done", Renames: [][2]string{{"rm/phase-1.md", "rm/DONE_phase-1.md"}},
		Delete: []string{"rm/x", "rm/y/z"}, Files: map[string]string{"rm/x/inside": "x is a folder now\n", "rm/y": "y is a file now\n"}})
	oldSHA, newSHA := ids[0], ids[1]
	mustGit(t, c, "", "reset", "-q", "--hard")
	moveMain(t, c, oldSHA, newSHA)

	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add(filepath.Join(c.Dir, "rm")); err != nil {
		t.Fatal(err)
	}
	if err := c.AdvanceCheckout(ctx, c.Dir, oldSHA, newSHA, nil); err != nil {
		t.Fatal(err)
	}
	// A marker file ends the stream: every event before it is in.
	writeFile(t, c.Dir, "rm/end", "")
	var order []string
	for done := false; !done; {
		var ev fsnotify.Event
		select {
		case ev = <-w.Events:
		case <-time.After(time.Minute):
			t.Fatalf("no event for the end marker; so far %q", order)
		}
		name := filepath.Base(ev.Name)
		if done = name == "end"; done {
			continue
		}
		if ev.Has(fsnotify.Create) || ev.Has(fsnotify.Remove) {
			order = append(order, ev.Op.String()+" "+name)
		}
	}
	created := slices.Index(order, "CREATE DONE_phase-1.md")
	removed := slices.Index(order, "REMOVE phase-1.md")
	if created < 0 || removed < 0 || created > removed {
		t.Errorf("folder events %q: DONE_phase-1.md must be created before phase-1.md is removed", order)
	}
	for p, want := range map[string]string{"rm/DONE_phase-1.md": "# p1\n", "rm/x/inside": "x is a folder now\n", "rm/y": "y is a file now\n"} {
		if got := readFile(t, c.Dir, p); got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
	if st := mustGit(t, c, "", "status", "--porcelain"); st != "?? rm/end" {
		t.Errorf("status after advance: %q", st)
	}
}

// A change staged in the base checkout, with the working tree as the index,
// is a local change: before the base moves, git status's staged column
// says so (its HEAD is the old base) and no diff-index runs (a process per
// landing, issue 25 §1); after the move, a diff-index against the old
// base does.
func TestWouldOverwriteStagedOnlyOneStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	oldSHA, newSHA := mergeSetup(t, c, nil)
	writeFile(t, c.Dir, "a.txt", "a staged by user\n")
	mustGit(t, c, "", "add", "a.txt")
	trace := filepath.Join(t.TempDir(), "trace")
	traced := c.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	want := []string{"a.txt"}
	if over, err := traced.WouldOverwrite(ctx, c.Dir, oldSHA, newSHA); err != nil || !slices.Equal(over, want) {
		t.Errorf("WouldOverwrite before the move = %q, %v; want %q", over, err, want)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "git diff-index") {
		t.Errorf("a diff-index ran where status read HEAD at the old base:\n%s", b)
	}
	moveMain(t, c, oldSHA, newSHA)
	if over, err := c.WouldOverwrite(ctx, c.Dir, oldSHA, newSHA); err != nil || !slices.Equal(over, want) {
		t.Errorf("WouldOverwrite after the move = %q, %v; want %q", over, err, want)
	}
}

// The move's last index work, the deletions left for last and the entries
// of the paths the caller owns, is one update-index --index-info (an rm
// --cached and an update-index per owned path before, issue 25 §1): the
// index ends at the new commit, the deleted file is gone from disk, the
// owned file's bytes stay.
func TestAdvanceCheckoutSettlesTheIndexInOneProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	oldSHA, merged := mergeSetup(t, c, nil)
	// The merge also deletes b.txt.
	tree, err := c.ReplaceFiles(ctx, strings.TrimSpace(mustGit(t, c, "", "rev-parse", merged+"^{tree}")), nil, []string{"b.txt"})
	if err != nil {
		t.Fatal(err)
	}
	newSHA, err := c.CommitTree(ctx, tree, []string{oldSHA}, "Merge task, b.txt deleted")
	if err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(t.TempDir(), "trace")
	traced := c.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	moveMain(t, c, oldSHA, newSHA)
	if err := traced.AdvanceCheckout(ctx, c.Dir, oldSHA, newSHA, []string{"MANIFEST.md"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "built-in: git update-index"); n != 1 || strings.Contains(string(b), "built-in: git rm") {
		t.Errorf("%d update-index (want 1), or an rm:\n%s", n, b)
	}
	if out := mustGit(t, c, "", "diff-index", "--cached", "--name-only", newSHA); strings.TrimSpace(out) != "" {
		t.Errorf("the index differs from the new commit in %q", out)
	}
	if _, err := os.Stat(filepath.Join(c.Dir, "b.txt")); !os.IsNotExist(err) {
		t.Errorf("b.txt, deleted by the merge, is still on disk: %v", err)
	}
	if got := readFile(t, c.Dir, "MANIFEST.md"); got != "- [ ] task\n" {
		t.Errorf("MANIFEST.md = %q, want its bytes untouched", got)
	}
}
