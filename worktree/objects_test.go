package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/claudopilot/claudopilot/internal/gittest"
)

func TestDirty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	commitFiles(t, c, "", "files", map[string]string{"keep.txt": "k\n", "del.txt": "d\n", "mv.txt": "m\n", "staged.txt": "s\n"})
	if d, err := c.Dirty(ctx, ""); err != nil || len(d) != 0 {
		t.Fatalf("clean Dirty = %q, %v", d, err)
	}
	writeFile(t, c.Dir, "README.md", "changed\n")
	writeFile(t, c.Dir, "staged.txt", "s2\n")
	mustGit(t, c, "", "add", "staged.txt")
	if err := os.Remove(filepath.Join(c.Dir, "del.txt")); err != nil {
		t.Fatal(err)
	}
	mustGit(t, c, "", "mv", "mv.txt", "moved.txt")
	writeFile(t, c.Dir, "new/deep/untracked.txt", "u\n")
	writeFile(t, c.Dir, "with space & ünïcode.txt", "u\n")
	writeFile(t, c.Dir, "ignored.bin", "i\n")
	if err := c.Exclude(ctx, "*.bin"); err != nil {
		t.Fatal(err)
	}
	d, err := c.Dirty(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"README.md", "del.txt", "moved.txt", "mv.txt", "new/deep/untracked.txt", "staged.txt", "with space & ünïcode.txt"}
	if !slices.Equal(d, want) {
		t.Errorf("Dirty = %q\nwant    %q", d, want)
	}
}

func TestCommitAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	if err := c.AddWorktree(ctx, wt, "task", "main"); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.CommitAll(ctx, wt, "nothing"); err != nil || ok {
		t.Fatalf("CommitAll(clean) = %v, %v", ok, err)
	}
	writeFile(t, wt, "README.md", "modified\n")
	writeFile(t, wt, "new/dir/file.txt", "untracked\n")
	writeFile(t, wt, "debug.log", "ignored\n")
	if err := c.Exclude(ctx, "*.log"); err != nil {
		t.Fatal(err)
	}
	msg := "task: do it\n\n# Heading kept\n--not-an-option"
	ok, err := c.CommitAll(ctx, wt, msg)
	if err != nil || !ok {
		t.Fatalf("CommitAll = %v, %v", ok, err)
	}
	if d, err := c.Dirty(ctx, wt); err != nil || len(d) != 0 {
		t.Errorf("Dirty after CommitAll = %q, %v", d, err)
	}
	if n, err := c.CountCommits(ctx, "main", "task"); err != nil || n != 1 {
		t.Errorf("CountCommits = %d, %v", n, err)
	}
	if got := mustGit(t, c, "", "log", "-1", "--format=%B", "task"); got != msg {
		t.Errorf("message = %q, want %q", got, msg)
	}
	if got := mustGit(t, c, "", "log", "-1", "--format=%an <%ae>", "task"); got != "Test Author <author@example.com>" {
		t.Errorf("author = %q", got)
	}
	names, err := c.DiffNames(ctx, "main", "task")
	if err != nil || !slices.Equal(names, []string{"README.md", "new/dir/file.txt"}) {
		t.Errorf("DiffNames = %q, %v", names, err)
	}
	if ok, err := c.CommitAll(ctx, wt, "again"); err != nil || ok {
		t.Errorf("second CommitAll = %v, %v", ok, err)
	}

	// No hook runs, even one that would fail (issue 21: an agent could
	// have planted it).
	hooks := filepath.Join(c.Dir, ".git", "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hooks, "pre-commit"), []byte("#!/bin/sh\necho hook says no >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, wt, "more.txt", "x")
	if ok, err := c.CommitAll(ctx, wt, "not blocked"); !ok || err != nil {
		t.Errorf("CommitAll beside a failing hook = %v, %v; want a commit", ok, err)
	}
}

func TestMergeTree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	// The base and its three children in one fast-import (nothing here
	// reads a checkout): 15 processes as commits and checkouts.
	ids := gittest.Import(t, c.Env, c.Dir,
		gittest.Commit{Ref: "base", From: "main^0", Message: "base", Files: map[string]string{"a.txt": "1\n2\n3\n", "b.txt": "b\n", "c.txt": "c\n"}},
		gittest.Commit{Ref: "left", From: ":1", Message: "left", Files: map[string]string{"a.txt": "1\n2\n3 left\n", "b.txt": "b left\n"}},
		gittest.Commit{Ref: "right", From: ":1", Message: "right", Files: map[string]string{"a.txt": "1 right\n2\n3\n", "new.txt": "n\n"}},
		gittest.Commit{Ref: "clash", From: ":1", Message: "clash", Files: map[string]string{"b.txt": "b clash\n", "c.txt": "c clash\n"}})
	left, right, clash := ids[1], ids[2], ids[3]

	tree, conflicts, err := c.MergeTree(ctx, left, right)
	if err != nil || conflicts != nil || !shaRE.MatchString(tree) {
		t.Fatalf("clean MergeTree = %q, %q, %v", tree, conflicts, err)
	}
	a, ok, err := c.ReadFile(ctx, tree, "a.txt")
	if err != nil || !ok || string(a) != "1 right\n2\n3 left\n" {
		t.Errorf("merged a.txt = %q, %v, %v", a, ok, err)
	}
	if _, ok, _ := c.ReadFile(ctx, tree, "new.txt"); !ok {
		t.Error("merged tree lacks new.txt")
	}

	tree, conflicts, err = c.MergeTree(ctx, left, clash)
	if err != nil || !shaRE.MatchString(tree) {
		t.Fatalf("conflicting MergeTree = %q, %v", tree, err)
	}
	if !slices.Equal(conflicts, []string{"b.txt"}) {
		t.Errorf("conflicts = %q, want [b.txt]", conflicts)
	}
	if b, _, _ := c.ReadFile(ctx, tree, "b.txt"); !strings.Contains(string(b), "<<<<<<<") {
		t.Errorf("conflicted b.txt has no markers: %q", b)
	}
	if _, _, err := c.MergeTree(ctx, left, "no-such-branch"); err == nil {
		t.Error("MergeTree with bad rev: no error")
	}
}

func TestMergeCommitFlow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	// main's commit and the task's on it in one fast-import: nothing
	// here reads a checkout (a commit, a worktree add and a commit in the
	// task's worktree were 8 processes; TestAddWorktree* add worktrees).
	ids := gittest.Import(t, c.Env, c.Dir,
		gittest.Commit{Ref: "main", From: "main^0", Message: "manifest", Files: map[string]string{"MANIFEST.md": "- [ ] task\n", "src.go": "package x\n"}},
		gittest.Commit{Ref: "task", From: ":1", Message: "work", Files: map[string]string{"src.go": "package x\n\nfunc F() {}\n"}})
	base, branch := ids[0], ids[1]

	tree, conflicts, err := c.MergeTree(ctx, base, branch)
	if err != nil || len(conflicts) > 0 {
		t.Fatalf("MergeTree = %q, %v", conflicts, err)
	}
	tree, err = c.ReplaceFiles(ctx, tree, map[string][]byte{"MANIFEST.md": []byte("- [x] task\n")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	merge, err := c.CommitTree(ctx, tree, []string{base, branch}, "Merge task")
	if err != nil || !shaRE.MatchString(merge) {
		t.Fatalf("CommitTree = %q, %v", merge, err)
	}
	if got := mustGit(t, c, "", "rev-list", "--parents", "-n1", merge); got != merge+" "+base+" "+branch {
		t.Errorf("parents = %q", got)
	}
	if got := mustGit(t, c, "", "log", "-1", "--format=%B%cn", merge); got != "Merge task\nTest Committer" {
		t.Errorf("commit = %q", got)
	}

	// Another writer moves main first: our CAS with the old base fails.
	other, err := c.CommitTree(ctx, tree, []string{base}, "someone else")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.UpdateRef(ctx, "refs/heads/main", other, base); err != nil {
		t.Fatalf("UpdateRef(other) = %v", err)
	}
	err = c.UpdateRef(ctx, "refs/heads/main", merge, base)
	if !errors.Is(err, ErrStale) {
		t.Fatalf("stale UpdateRef = %v, want ErrStale", err)
	}
	var ge *GitError
	if !errors.As(err, &ge) {
		t.Errorf("stale UpdateRef error has no *GitError: %v", err)
	}
	if got, _ := c.RevParse(ctx, "main"); got != other {
		t.Errorf("main = %s after stale update, want %s", got, other)
	}
	// With the right old value it succeeds.
	if err := c.UpdateRef(ctx, "refs/heads/main", merge, other); err != nil {
		t.Fatalf("UpdateRef = %v", err)
	}
	if got, _ := c.RevParse(ctx, "main"); got != merge {
		t.Errorf("main = %s, want %s", got, merge)
	}
	if ok, err := c.IsAncestor(ctx, branch, "main"); err != nil || !ok {
		t.Errorf("IsAncestor(branch, main) = %v, %v", ok, err)
	}
	if got, ok, _ := c.ReadFile(ctx, "main", "MANIFEST.md"); !ok || string(got) != "- [x] task\n" {
		t.Errorf("manifest on main = %q", got)
	}

	// Creating a ref that must not exist; stale when it does.
	zero := strings.Repeat("0", 40)
	if err := c.UpdateRef(ctx, "refs/heads/fresh", merge, zero); err != nil {
		t.Errorf("create ref = %v", err)
	}
	if err := c.UpdateRef(ctx, "refs/heads/fresh", base, zero); !errors.Is(err, ErrStale) {
		t.Errorf("create existing ref = %v, want ErrStale", err)
	}
	// Expecting a value for a ref that does not exist is stale too.
	if err := c.UpdateRef(ctx, "refs/heads/gone", merge, base); !errors.Is(err, ErrStale) {
		t.Errorf("update missing ref = %v, want ErrStale", err)
	}
	// A bad new value is an error, not stale.
	if err := c.UpdateRef(ctx, "refs/heads/fresh", zero[:39]+"1", merge); err == nil || errors.Is(err, ErrStale) {
		t.Errorf("update to bad object = %v, want non-stale error", err)
	}
	// Unconditional update.
	if err := c.UpdateRef(ctx, "refs/heads/fresh", base, ""); err != nil {
		t.Errorf("unconditional update = %v", err)
	}
}

func TestReplaceFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	writeFile(t, c.Dir, "bin/run.sh", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(c.Dir, "bin/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	head := commitFiles(t, c, "", "files", map[string]string{"docs/a.md": "a\n", "old.txt": "old\n", "dir/x": "x\n"})
	indexBefore := mustGit(t, c, "", "ls-files", "-s")

	tree, err := c.ReplaceFiles(ctx, head, map[string][]byte{
		"bin/run.sh":         []byte("#!/bin/sh\necho new\n"),
		"docs/a.md":          []byte("a2\n"),
		"brand/new/file.txt": []byte("fresh"),
		"with space.txt":     []byte("s\r\n"),
	}, []string{"old.txt", "not-there.txt"})
	if err != nil {
		t.Fatal(err)
	}
	ls := mustGit(t, c, "", "ls-tree", "-r", "--format=%(objectmode) %(path)", tree)
	want := "100755 bin/run.sh\n100644 brand/new/file.txt\n100644 dir/x\n100644 docs/a.md\n100644 README.md\n100644 with space.txt"
	if got := sortLines(ls); got != sortLines(want) {
		t.Errorf("tree =\n%s\nwant\n%s", got, sortLines(want))
	}
	for p, want := range map[string]string{"bin/run.sh": "#!/bin/sh\necho new\n", "brand/new/file.txt": "fresh", "with space.txt": "s\r\n", "dir/x": "x\n"} {
		if got, ok, err := c.ReadFile(ctx, tree, p); err != nil || !ok || string(got) != want {
			t.Errorf("ReadFile(%s) = %q, %v, %v", p, got, ok, err)
		}
	}
	// Nothing in the repository's own index or worktree changed.
	if got := mustGit(t, c, "", "ls-files", "-s"); got != indexBefore {
		t.Error("ReplaceFiles changed the worktree index")
	}
	if d, _ := c.Dirty(ctx, ""); len(d) != 0 {
		t.Errorf("ReplaceFiles dirtied the worktree: %q", d)
	}
	// No changes: same tree.
	headTree, _ := c.RevParse(ctx, "HEAD^{tree}")
	if same, err := c.ReplaceFiles(ctx, head, nil, nil); err != nil || same != headTree {
		t.Errorf("empty ReplaceFiles = %q, %v; want %q", same, err, headTree)
	}

	for name, tc := range map[string]struct {
		files  map[string][]byte
		remove []string
	}{
		"write over directory": {files: map[string][]byte{"dir": []byte("x")}},
		"write below file":     {files: map[string][]byte{"old.txt/x": []byte("x")}},
		"write and remove":     {files: map[string][]byte{"a": nil}, remove: []string{"a"}},
		"remove directory":     {remove: []string{"docs"}},
		"absolute path":        {files: map[string][]byte{"/etc/passwd": nil}},
		"dotdot path":          {files: map[string][]byte{"../x": nil}},
		"unclean path":         {files: map[string][]byte{"docs//a.md": nil}},
		"file and child":       {files: map[string][]byte{"n": nil, "n/m": nil}},
		"dot git":              {files: map[string][]byte{".git/config": nil}},
	} {
		if _, err := c.ReplaceFiles(ctx, head, tc.files, tc.remove); err == nil {
			t.Errorf("%s: no error", name)
		}
	}

	// Concurrent calls do not interfere.
	const n = 8
	trees := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			trees[i], errs[i] = c.ReplaceFiles(ctx, head, map[string][]byte{"MANIFEST.md": fmt.Appendf(nil, "v%d\n", i)}, nil)
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if got, _, _ := c.ReadFile(ctx, trees[i], "MANIFEST.md"); string(got) != fmt.Sprintf("v%d\n", i) {
			t.Errorf("tree %d MANIFEST = %q", i, got)
		}
	}
}

func sortLines(s string) string {
	lines := strings.Split(s, "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	commitFiles(t, c, "", "f", map[string]string{"d/f.txt": "content\n", "empty": ""})
	if got, ok, err := c.ReadFile(ctx, "HEAD", "d/f.txt"); err != nil || !ok || string(got) != "content\n" {
		t.Errorf("ReadFile = %q, %v, %v", got, ok, err)
	}
	if got, ok, err := c.ReadFile(ctx, "main", "empty"); err != nil || !ok || len(got) != 0 {
		t.Errorf("ReadFile(empty) = %q, %v, %v", got, ok, err)
	}
	if got, ok, err := c.ReadFile(ctx, "HEAD", "missing.txt"); err != nil || ok || got != nil {
		t.Errorf("ReadFile(missing) = %q, %v, %v", got, ok, err)
	}
	if _, ok, err := c.ReadFile(ctx, "no-such-rev", "d/f.txt"); !errors.Is(err, ErrNoRev) || ok {
		t.Errorf("ReadFile(bad rev) = %v, %v; want ErrNoRev", ok, err)
	}
	if _, ok, err := c.ReadFile(ctx, "HEAD", "d"); err == nil || ok {
		t.Errorf("ReadFile(directory) = %v, %v; want error", ok, err)
	}
	// Works on trees too.
	tree, _ := c.RevParse(ctx, "HEAD^{tree}")
	if got, ok, err := c.ReadFile(ctx, tree, "d/f.txt"); err != nil || !ok || string(got) != "content\n" {
		t.Errorf("ReadFile(tree) = %q, %v, %v", got, ok, err)
	}
}

func TestHistoryQueries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	first, _ := c.RevParse(ctx, "HEAD")
	// side's three commits in one fast-import, main checked out (8
	// processes as checkouts, commits and a git mv).
	ids := gittest.Import(t, c.Env, c.Dir,
		gittest.Commit{Ref: "side", From: "main^0", Message: "c1", Files: map[string]string{"a": "1"}},
		gittest.Commit{Ref: "side", Message: "c2", Files: map[string]string{"b/c": "2", "a": "1b"}},
		gittest.Commit{Ref: "side", Message: "rename", Renames: [][2]string{{"a", "renamed"}}})
	c1, c2, c3 := ids[0], ids[1], ids[2]

	for _, tc := range []struct {
		a, b string
		want bool
	}{{first, c2, true}, {c1, c2, true}, {c2, c1, false}, {c2, c2, true}, {"side", "main", false}} {
		if got, err := c.IsAncestor(ctx, tc.a, tc.b); err != nil || got != tc.want {
			t.Errorf("IsAncestor(%s, %s) = %v, %v", tc.a, tc.b, got, err)
		}
	}
	if _, err := c.IsAncestor(ctx, "nope", "main"); err == nil {
		t.Error("IsAncestor(bad) no error")
	}
	for _, tc := range []struct {
		from, to string
		want     int
	}{{"main", "side", 3}, {"side", "main", 0}, {c1, c3, 2}, {"", "side", 4}} {
		if got, err := c.CountCommits(ctx, tc.from, tc.to); err != nil || got != tc.want {
			t.Errorf("CountCommits(%s, %s) = %d, %v; want %d", tc.from, tc.to, got, err, tc.want)
		}
	}
	if _, err := c.CountCommits(ctx, "nope", "main"); err == nil {
		t.Error("CountCommits(bad) no error")
	}
	if got, err := c.DiffNames(ctx, c2, c3); err != nil || !slices.Equal(got, []string{"a", "renamed"}) {
		t.Errorf("DiffNames(rename) = %q, %v", got, err)
	}
	t1, _ := c.RevParse(ctx, c1+"^{tree}")
	t2, _ := c.RevParse(ctx, c2+"^{tree}")
	if got, err := c.DiffNames(ctx, t1, t2); err != nil || !slices.Equal(got, []string{"a", "b/c"}) {
		t.Errorf("DiffNames(trees) = %q, %v", got, err)
	}
	if got, err := c.DiffNames(ctx, c2, c2); err != nil || len(got) != 0 {
		t.Errorf("DiffNames(same) = %q, %v", got, err)
	}

	// DeleteBranch: refused while checked out, works otherwise.
	if err := c.DeleteBranch(ctx, "main"); err == nil {
		t.Error("DeleteBranch(checked out) no error")
	}
	if err := c.DeleteBranch(ctx, "side"); err != nil {
		t.Errorf("DeleteBranch(side) = %v", err)
	}
	if ok, _ := c.BranchExists(ctx, "side"); ok {
		t.Error("side still exists")
	}
	if err := c.DeleteBranch(ctx, "side"); err == nil {
		t.Error("DeleteBranch(missing) no error")
	}
}
