package gittest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Import makes the commits it is given, as `git add` and `git commit`
// would, in one process.
func TestImport(t *testing.T) {
	dir := t.TempDir()
	env := Env(dir)
	git := Runner(t, env)
	repo := filepath.Join(dir, "r")
	git("init", "-q", "-b", "main", repo)
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("-C", repo, "add", "-A")
	git("-C", repo, "commit", "-qm", "init")
	odd := "sp ace/q\"uote\\back\u00e9.txt"
	h := Import(t, env, repo,
		Commit{Ref: "auto/p1", From: "main^0", Message: "one", Renames: [][2]string{{"a.txt", "b.txt"}}, Files: map[string]string{odd: "x\n", "run.sh": "#!/bin/sh\n"}, Exec: []string{"run.sh"}, Links: map[string]string{"ln": "../evil"}},
		Commit{Ref: "auto/p1", Message: "two", Delete: []string{"b.txt"}},
		Commit{Ref: "m", From: "main^0", Merge: []string{":2"}, Message: "merge", Files: map[string]string{"c.txt": "c\n"}})
	if got := git("-C", repo, "rev-list", "--parents", "-n1", "m"); got != h[2]+" "+git("-C", repo, "rev-parse", "main")+" "+h[1] {
		t.Errorf("the merge and its parents = %q, want %s, main and %s", got, h[2], h[1])
	}
	if got := git("-C", repo, "ls-tree", "--name-only", h[2]); got != "a.txt\nc.txt" {
		t.Errorf("the merge's tree (main's and c.txt): %q", got)
	}
	if got := git("-C", repo, "rev-parse", "auto/p1", "auto/p1^", "auto/p1^^"); got != h[1]+"\n"+h[0]+"\n"+git("-C", repo, "rev-parse", "main") {
		t.Errorf("auto/p1, its parent and grandparent = %q, want %v and main", got, h)
	}
	if got := git("-C", repo, "-c", "core.quotePath=false", "ls-tree", "-r", "--format=%(objectmode) %(path)", h[0]); got != "100644 b.txt\n120000 ln\n100755 run.sh\n100644 "+`"sp ace/q\"uote\\backé.txt"` {
		t.Errorf("tree of the first commit:\n%s", got)
	}
	if got := git("-C", repo, "ls-tree", "-r", "--name-only", h[1]); got != "ln\nrun.sh\n"+`"sp ace/q\"uote\\back\303\251.txt"` {
		t.Errorf("tree of the second commit:\n%s", got)
	}
	if got := git("-C", repo, "cat-file", "blob", h[0]+":ln"); got != "../evil" {
		t.Errorf("the link's target: %q", got)
	}
	if got := git("-C", repo, "log", "-1", "--format=%an <%ae> %s", h[1]); got != "t <t@x> two" {
		t.Errorf("second commit: %q", got)
	}
}

// Head reads what git rev-parse HEAD says, in the main worktree on a
// branch, in a linked worktree, and detached; a packed ref is left to git.
func TestHead(t *testing.T) {
	dir := t.TempDir()
	env := Env(dir)
	git := Runner(t, env)
	repo, linked := filepath.Join(dir, "r"), filepath.Join(dir, "linked")
	git("init", "-q", "-b", "main", repo)
	git("-C", repo, "commit", "-q", "--allow-empty", "-m", "one")
	git("-C", repo, "worktree", "add", "-q", "-b", "side", linked)
	git("-C", linked, "commit", "-q", "--allow-empty", "-m", "two")
	detached := filepath.Join(dir, "detached")
	git("-C", repo, "worktree", "add", "-q", "--detach", detached, "side^")
	for _, d := range []string{repo, linked, detached} {
		if h, ok := Head(d); !ok || h != git("-C", d, "rev-parse", "HEAD") {
			t.Errorf("Head(%s) = %q, %v; want rev-parse HEAD", d, h, ok)
		}
	}
	git("-C", repo, "pack-refs", "--all")
	if h, ok := Head(repo); ok {
		t.Errorf("Head of a packed ref = %q, want it left to git", h)
	}
}

// MemTempDir moves the test binary's temporary folders to a fresh folder
// on /dev/shm only when TMPDIR is not set, and its cleanup removes that
// folder and unsets TMPDIR again; a TMPDIR given is left alone.
func TestMemTempDir(t *testing.T) {
	t.Setenv("TMPDIR", "/given")
	MemTempDir("x-")()
	if got := os.Getenv("TMPDIR"); got != "/given" {
		t.Errorf("TMPDIR given: %q after, want it left alone", got)
	}
	t.Setenv("TMPDIR", "")
	cleanup := MemTempDir("gittest-memtemp-")
	dir := os.Getenv("TMPDIR")
	if memTempRoot(1<<30) == "" {
		if dir != "" {
			t.Errorf("no tmpfs with room: TMPDIR %q, want it unset", dir)
		}
		cleanup()
		return
	}
	if filepath.Dir(dir) != "/dev/shm" || !strings.HasPrefix(filepath.Base(dir), "gittest-memtemp-") {
		t.Fatalf("TMPDIR %q, want a fresh folder on /dev/shm", dir)
	}
	if made, err := os.MkdirTemp("", "in-"); err != nil || filepath.Dir(made) != dir {
		t.Errorf("os.MkdirTemp: %q, %v; want it in %s", made, err, dir)
	}
	cleanup()
	if _, err := os.Stat(dir); !os.IsNotExist(err) || os.Getenv("TMPDIR") != "" {
		t.Errorf("after the cleanup: %s stat %v, TMPDIR %q; want it gone and TMPDIR unset", dir, err, os.Getenv("TMPDIR"))
	}
}

// importLoose writes, without a process, the very objects and refs git
// fast-import writes for the same commits (renames of a file and of a
// folder, a deletion that empties a folder, a file over a folder, a
// file that sorts before a folder of its prefix, a
// link, an executable, a merge by mark, a branch's commits in a row, a
// full id), and its reflog lines; a revision it does not read, a move
// that is not a fast-forward, a repository in a SHA-256 format are left
// to fast-import.
func TestImportLooseIsFastImport(t *testing.T) {
	dir := t.TempDir()
	env := Env(dir)
	git := Runner(t, env)
	make := func(name string) string {
		repo := filepath.Join(dir, name)
		git("init", "-q", "-b", "main", repo)
		for p, c := range map[string]string{"a.txt": "a\n", "d/x.txt": "x\n", "d/e/y.txt": "y\n", "f/z.txt": "z\n", "gone/only.txt": "o\n"} {
			p = filepath.Join(repo, p)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		git("-C", repo, "add", "-A")
		git("-C", repo, "commit", "-qm", "init")
		return repo
	}
	loose, fast := make("loose"), filepath.Join(dir, "fast")
	if err := CopyTree(fast, loose); err != nil {
		t.Fatal(err)
	}
	main := git("-C", loose, "rev-parse", "main")
	commits := []Commit{
		{Ref: "auto/p1", From: "main^0", Message: "one\n", Renames: [][2]string{{"a.txt", "b/a.txt"}, {"d", "moved/d"}}, Delete: []string{"gone/only.txt"},
			Files: map[string]string{"sp ace/q\"uote\\back\u00e9.txt": "x\n", "run.sh": "#!/bin/sh\n", "f": "a file where a folder was\n", "moved/d.txt": "sorts before the folder moved/d\n"}, Exec: []string{"run.sh"}, Links: map[string]string{"ln": "../evil"}},
		{Ref: "auto/p1", Message: "two", Delete: []string{"moved/d/e/y.txt"}, Files: map[string]string{"moved/d/e2/w.txt": "w\n"}},
		{Ref: "main", From: main, Merge: []string{":2"}, Message: "merge", Files: map[string]string{"c.txt": "c\n"}},
		{Ref: "refs/heads/empty", Message: "root, nothing in it"},
	}
	when := "1700000000 +0000"
	got, ok := importLoose(env, loose, commits, when)
	if !ok {
		t.Fatal("importLoose left a plain import to fast-import")
	}
	want := importFast(t, env, fast, commits, when)
	if !slices.Equal(got, want) {
		t.Fatalf("importLoose wrote %v, fast-import %v", got, want)
	}
	refs := func(repo string) string {
		return git("-C", repo, "for-each-ref", "--format=%(refname) %(objectname)")
	}
	if refs(loose) != refs(fast) {
		t.Errorf("refs: loose\n%s\nfast-import\n%s", refs(loose), refs(fast))
	}
	git("-C", loose, "fsck", "--strict", "--no-dangling")
	reflog := func(repo, ref string) string {
		b, _ := os.ReadFile(filepath.Join(repo, ".git", "logs", ref))
		var ls []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.Fields(l)
			ls = append(ls, f[0]+" "+f[1]+" "+l[strings.IndexByte(l, '\t'):])
		}
		return strings.Join(ls, "\n")
	}
	for _, ref := range []string{"refs/heads/auto/p1", "refs/heads/main", "HEAD"} {
		if a, b := reflog(loose, ref), reflog(fast, ref); a != b {
			t.Errorf("reflog of %s: loose\n%s\nfast-import\n%s", ref, a, b)
		}
	}
	for _, c := range [][]Commit{
		{{Ref: "x", From: "main~1", Message: "m"}},
		{{Ref: "main", From: "refs/heads/empty", Message: "not a fast-forward of main"}},
		{{Ref: "x", From: "nosuch", Message: "m"}},
	} {
		if _, ok := importLoose(env, loose, c, when); ok {
			t.Errorf("importLoose took %+v, want it left to fast-import", c)
		}
	}
	sha256 := filepath.Join(dir, "sha256")
	git("init", "-q", "--object-format=sha256", sha256)
	if _, ok := importLoose(env, sha256, commits[3:], when); ok {
		t.Error("importLoose wrote in a SHA-256 repository")
	}
}
