package gitobj_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/internal/gitobj"
	"github.com/claudopilot/claudopilot/internal/gittest"
)

// TestWriteIsGits: the blob, tree and commit Write makes are the ids git
// makes of the same content (hash-object, mktree, commit-tree), in git's
// tree order (a folder sorts as its name with a slash: "a.txt" before
// the folder "a", the file "a" before "a.txt"), and fsck --strict takes
// them; Read gives them back, and a packed object is ErrNotLoose.
func TestWriteIsGits(t *testing.T) {
	dir := t.TempDir()
	env := gittest.Env(dir)
	git := gittest.Runner(t, env)
	repo := filepath.Join(dir, "r")
	git("init", "-q", repo)
	r, ok := gitobj.Open(repo)
	if !ok || r.Bare || r.GitDir != filepath.Join(repo, ".git") {
		t.Fatalf("Open: %+v, %v", r, ok)
	}
	blob, err := r.Write("blob", []byte("x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := gitIn(t, env, repo, "x\n", "hash-object", "--stdin"); blob != want {
		t.Errorf("blob %s, git hash-object %s", blob, want)
	}
	sub, err := r.Write("tree", must(gitobj.FormatTree([]gitobj.Entry{{Mode: gitobj.ModeFile, Name: "x", ID: blob}})))
	if err != nil {
		t.Fatal(err)
	}
	entries := []gitobj.Entry{
		{Mode: gitobj.ModeDir, Name: "a", ID: sub},
		{Mode: gitobj.ModeFile, Name: "a.txt", ID: blob},
		{Mode: gitobj.ModeExec, Name: "a-b", ID: blob},
		{Mode: gitobj.ModeLink, Name: "a0", ID: blob},
		{Mode: gitobj.ModeFile, Name: "B", ID: blob},
	}
	var mk strings.Builder
	for _, e := range entries {
		kind := "blob"
		if e.IsDir() {
			kind = "tree"
		}
		mk.WriteString(e.Mode + " " + kind + " " + e.ID + "\t" + e.Name + "\n")
	}
	tree, err := r.Write("tree", must(gitobj.FormatTree(entries)))
	if err != nil {
		t.Fatal(err)
	}
	if want := gitIn(t, env, repo, mk.String(), "mktree"); tree != want {
		t.Errorf("tree %s, git mktree %s", tree, want)
	}
	if got, want := names(entries), "B a-b a.txt a a0"; got != want {
		t.Errorf("FormatTree's order %q, want git's %q", got, want)
	}
	when := time.Unix(1700000000, 0).In(time.FixedZone("", -(4*3600 + 30*60)))
	who := gitobj.Ident("A U <a@x>", when)
	c, err := r.Write("commit", gitobj.CommitBody(tree, nil, who, who, "m\n"))
	if err != nil {
		t.Fatal(err)
	}
	cenv := append(env, "GIT_AUTHOR_NAME=A U", "GIT_AUTHOR_EMAIL=a@x", "GIT_AUTHOR_DATE=1700000000 -0430",
		"GIT_COMMITTER_NAME=A U", "GIT_COMMITTER_EMAIL=a@x", "GIT_COMMITTER_DATE=1700000000 -0430")
	if want := gitIn(t, cenv, repo, "m\n", "commit-tree", tree); c != want {
		t.Errorf("commit %s, git commit-tree %s", c, want)
	}
	c2, err := r.Write("commit", gitobj.CommitBody(tree, []string{c, c}, who, who, "two parents\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.MoveRef("refs/heads/main", c2, "", nil); err != nil {
		t.Fatal(err)
	}
	git("-C", repo, "fsck", "--strict", "--no-dangling")
	body, err := r.ReadKind("commit", c2)
	if err != nil {
		t.Fatal(err)
	}
	if tr, ps, err := gitobj.ParseCommit(body); err != nil || tr != tree || len(ps) != 2 || ps[0] != c {
		t.Errorf("ParseCommit: %s %v %v", tr, ps, err)
	}
	body, err = r.ReadKind("tree", tree)
	if err != nil {
		t.Fatal(err)
	}
	if es, err := gitobj.ParseTree(body); err != nil || names(es) != "B a-b a.txt a a0" || es[3].ID != sub {
		t.Errorf("ParseTree: %+v %v", es, err)
	}
	if _, err := r.ReadKind("tree", blob); err == nil {
		t.Error("ReadKind read a blob as a tree")
	}
	git("-C", repo, "repack", "-a", "-d", "-q")
	git("-C", repo, "prune-packed")
	if _, _, err := r.Read(c); !errors.Is(err, gitobj.ErrNotLoose) {
		t.Errorf("Read of a packed object: %v, want ErrNotLoose", err)
	}
	if _, err := gitobj.FormatTree([]gitobj.Entry{{Mode: gitobj.ModeFile, Name: "x", ID: "nothex"}}); err == nil {
		t.Error("FormatTree took a bad id")
	}
}

// TestRefs: MoveRef moves a ref only from the value it is at (else
// ErrRefMoved, nothing changed), not while git's lock is held, with the
// reflog lines git's update-ref adds (the branch's and HEAD's); Ref reads
// a loose ref, then a packed one; a symbolic ref is ErrNotPlain; a bare
// repository opens bare, a SHA-256 one not at all.
func TestRefs(t *testing.T) {
	dir := t.TempDir()
	env := gittest.Env(dir)
	git := gittest.Runner(t, env)
	repo := filepath.Join(dir, "r")
	git("init", "-q", "-b", "main", repo)
	git("-C", repo, "commit", "-q", "--allow-empty", "-m", "one")
	one := git("-C", repo, "rev-parse", "HEAD")
	git("-C", repo, "commit", "-q", "--allow-empty", "-m", "two")
	two := git("-C", repo, "rev-parse", "HEAD")
	r, ok := gitobj.Open(repo)
	if !ok {
		t.Fatal("Open: not plain")
	}
	if err := r.MoveRef("refs/heads/main", one, one, nil); !errors.Is(err, gitobj.ErrRefMoved) {
		t.Errorf("a move from a stale value: %v, want ErrRefMoved", err)
	}
	lock := filepath.Join(repo, ".git", "refs", "heads", "main.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.MoveRef("refs/heads/main", one, two, nil); err == nil {
		t.Error("MoveRef moved a locked ref")
	}
	os.Remove(lock)
	if got := git("-C", repo, "rev-parse", "main"); got != two {
		t.Fatalf("main moved by a refused move: %s", got)
	}
	if err := r.MoveRef("refs/heads/main", one, two, &gitobj.Reflog{Who: "R <r@x>", Msg: "back"}); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"main", "HEAD"} {
		if got := git("-C", repo, "reflog", "-1", "--format=%H %gs %gn", ref); got != one+" back R" {
			t.Errorf("reflog of %s: %q", ref, got)
		}
	}
	if err := r.MoveRef("refs/heads/new/b", two, "", nil); err != nil {
		t.Fatal(err)
	}
	git("-C", repo, "pack-refs", "--all")
	for ref, want := range map[string]string{"refs/heads/main": one, "refs/heads/new/b": two, "refs/heads/none": ""} {
		if got, err := r.Ref(ref); err != nil || got != want {
			t.Errorf("Ref(%s) packed: %q, %v, want %q", ref, got, err, want)
		}
	}
	git("-C", repo, "symbolic-ref", "refs/heads/sym", "refs/heads/main")
	if _, err := r.Ref("refs/heads/sym"); !errors.Is(err, gitobj.ErrNotPlain) {
		t.Errorf("Ref of a symbolic ref: %v, want ErrNotPlain", err)
	}
	bare := filepath.Join(dir, "bare.git")
	git("init", "-q", "--bare", bare)
	if b, ok := gitobj.Open(bare); !ok || !b.Bare || b.Common != bare {
		t.Errorf("Open of a bare repository: %+v, %v", b, ok)
	}
	sha256 := filepath.Join(dir, "sha256")
	git("init", "-q", "--object-format=sha256", sha256)
	if _, ok := gitobj.Open(sha256); ok {
		t.Error("Open took a SHA-256 repository as plain")
	}
}

func names(es []gitobj.Entry) string {
	var s []string
	for _, e := range es {
		s = append(s, e.Name)
	}
	return strings.Join(s, " ")
}

// gitIn runs git with stdin in dir and returns its output, trimmed.
func gitIn(t *testing.T, env []string, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, env, strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
