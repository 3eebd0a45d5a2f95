package worktree

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A sandboxed process's private object store comes into the repository's
// through git's checks: its new commit arrives, loose or packed; a file
// named after an object of the base but holding other content adds that
// content under its own name and leaves the base's object as it was; its
// alternates, symbolic links and index files are dropped unread.
func TestAbsorb(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	ctx := context.Background()
	readme := mustGit(t, c, "", "rev-parse", "HEAD:README.md")
	shared := filepath.Join(c.Dir, ".git", "objects")
	for _, packed := range []bool{false, true} {
		priv := filepath.Join(t.TempDir(), "objects")
		wt := filepath.Join(t.TempDir(), "wt")
		mustGit(t, c, "", "worktree", "add", "-q", "--detach", wt)
		os.MkdirAll(filepath.Join(priv, "info"), 0o755)
		os.WriteFile(filepath.Join(priv, "info", "alternates"), []byte(shared+"\n"), 0o644)
		// As the sandbox has it: objects/ is the private store.
		in := func(args ...string) string {
			t.Helper()
			cmd := exec.Command("git", args...)
			cmd.Dir, cmd.Env = wt, append(testEnv(), "GIT_OBJECT_DIRECTORY="+priv)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("git %s: %v", strings.Join(args, " "), err)
			}
			return strings.TrimSpace(string(out))
		}
		writeFile(t, wt, "new.txt", fmt.Sprintf("new, packed %v\n", packed))
		in("add", "new.txt")
		in("commit", "-q", "-m", "in the sandbox")
		tip := in("rev-parse", "HEAD")
		// A forged object: the base's README.md name, other content.
		other := in("hash-object", "-w", "new.txt")
		forged := filepath.Join(priv, readme[:2], readme[2:])
		os.MkdirAll(filepath.Dir(forged), 0o755)
		b, _ := os.ReadFile(filepath.Join(priv, other[:2], other[2:]))
		os.WriteFile(forged, b, 0o444)
		if packed {
			// git repack in the private store: its objects go in a pack
			// (with an index git will not read).
			in("repack", "-q", "-a", "-d", "-l")
		}
		os.Symlink("/etc/passwd", filepath.Join(priv, "pack", "pack-"+strings.Repeat("a", 40)+".idx"))
		os.Remove(filepath.Join(priv, "info", "alternates"))
		os.WriteFile(filepath.Join(priv, "info", "alternates"), []byte("/nonexistent\n"), 0o644)
		n, err := c.Absorb(ctx, priv)
		if err != nil {
			t.Fatalf("packed=%v: %v", packed, err)
		}
		if n < 3 {
			t.Errorf("packed=%v: %d objects absorbed, want the commit, its tree and blob", packed, n)
		}
		if got := mustGit(t, c, "", "log", "-1", "--format=%s", tip); got != "in the sandbox" {
			t.Errorf("packed=%v: the commit did not arrive: %q", packed, got)
		}
		if got := mustGit(t, c, "", "cat-file", "blob", readme); got != "hello" {
			t.Errorf("packed=%v: the base's README.md now reads %q", packed, got)
		}
		if _, err := os.Stat(filepath.Join(shared, "info", "alternates")); err == nil {
			t.Errorf("packed=%v: the repository has alternates now", packed)
		}
		if _, err := os.Stat(priv); err == nil {
			t.Errorf("packed=%v: the private store is still there", packed)
		}
		mustGit(t, c, "", "worktree", "remove", "--force", wt)
	}
	mustGit(t, c, "", "fsck", "--no-dangling")
}

// An empty private store costs no git process and is left alone.
func TestAbsorbNothing(t *testing.T) {
	t.Parallel()
	c := &Client{Dir: t.TempDir()}
	priv := filepath.Join(t.TempDir(), "objects")
	os.MkdirAll(filepath.Join(priv, "pack"), 0o755)
	os.MkdirAll(filepath.Join(priv, "info"), 0o755)
	if n, err := c.Absorb(context.Background(), priv); n != 0 || err != nil {
		t.Errorf("Absorb = %d, %v", n, err)
	}
}

// BenchmarkAbsorb is what bringing one commit's objects (a commit, a tree,
// a blob) into the repository costs: what the private object store of
// issue 21 §3 adds to a sandboxed attempt that commits.
func BenchmarkAbsorb(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git not installed")
	}
	ctx := context.Background()
	dir := b.TempDir()
	env := testEnv()
	if out, err := exec.Command("git", "init", "-q", "-b", "main", dir).CombinedOutput(); err != nil {
		b.Fatalf("git init: %v\n%s", err, out)
	}
	c, err := Open(ctx, dir, env)
	if err != nil {
		b.Fatal(err)
	}
	priv := filepath.Join(b.TempDir(), "objects")
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		os.MkdirAll(filepath.Join(priv, "pack"), 0o755)
		os.WriteFile(filepath.Join(dir, "f"), []byte(fmt.Sprintf("%d\n", i)), 0o644)
		for _, args := range [][]string{{"add", "f"}, {"commit", "-q", "-m", "x"}} {
			cmd := exec.Command("git", args...)
			cmd.Dir, cmd.Env = dir, append(env, "GIT_OBJECT_DIRECTORY="+priv, "GIT_ALTERNATE_OBJECT_DIRECTORIES="+filepath.Join(dir, ".git", "objects"))
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		b.StartTimer()
		if n, err := c.Absorb(ctx, priv); err != nil || n != 3 {
			b.Fatalf("Absorb = %d, %v", n, err)
		}
	}
}

// Loose objects only (what an agent's commits leave) come in through one
// git process, unpack-objects (index-pack from unpackLimit objects on),
// fed a pack the driver writes: 3 before (cat-file, pack-objects,
// unpack-objects). A loose file whose header git would not write, or
// whose content is not the size its header says, stops the absorb, and
// the commit does not come in.
func TestAbsorbLooseOneProcess(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	ctx := context.Background()
	head := mustGit(t, c, "", "rev-parse", "HEAD")
	readme := sha1.Sum([]byte("blob 6\x00hello\n")) // newRepo's README.md
	made := 0
	// store writes, as an agent's commit in a sandbox leaves them, the
	// loose objects of a commit on head adding files d/f000.txt...: its
	// blobs, the trees d and root, the commit. Written here, not by a
	// worktree add, git add, commit, rev-parse and worktree remove (six
	// processes a store, 36 of the test's 61).
	store := func(files int) (string, string) {
		t.Helper()
		made++
		priv := filepath.Join(t.TempDir(), "objects")
		os.MkdirAll(filepath.Join(priv, "pack"), 0o755)
		var d []byte
		for i := range files {
			id := looseObject(t, priv, "blob", fmt.Sprintf("file %d of %d, store %d\n%s", i, files, made, strings.Repeat("x", i*37)))
			d = append(append(d, fmt.Sprintf("100644 f%03d.txt\x00", i)...), id[:]...)
		}
		dir := looseObject(t, priv, "tree", string(d))
		root := looseObject(t, priv, "tree", "100644 README.md\x00"+string(readme[:])+"40000 d\x00"+string(dir[:]))
		when := " 1704164645 +0000\n" // testEnv's dates
		tip := looseObject(t, priv, "commit", fmt.Sprintf("tree %x\nparent %s\nauthor Test Author <author@example.com>%scommitter Test Committer <committer@example.com>%s\nloose\n", root, head, when, when))
		return priv, fmt.Sprintf("%x", tip)
	}
	for _, files := range []int{1, 150} {
		priv, tip := store(files)
		trace := filepath.Join(t.TempDir(), "trace")
		traced := c.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
		n, err := traced.Absorb(ctx, priv)
		if err != nil || n != files+3 {
			t.Fatalf("%d files: Absorb = %d, %v; want %d objects", files, n, err, files+3)
		}
		if got := mustGit(t, c, "", "log", "-1", "--format=%s", tip); got != "loose" {
			t.Errorf("%d files: the commit did not arrive: %q", files, got)
		}
		b, _ := os.ReadFile(trace)
		if calls := strings.Count(string(b), "trace: built-in: git "); calls != 1 {
			t.Errorf("%d files: %d git processes, want 1:\n%s", files, calls, b)
		}
	}
	mustGit(t, c, "", "fsck", "--no-dangling")

	for _, forge := range []string{"blob 5\x00hello!", "blob 9\x00hello", "blob 05\x00hello", "bolb 5\x00hello"} {
		priv, tip := store(1)
		var z bytes.Buffer
		zw := zlib.NewWriter(&z)
		zw.Write([]byte(forge))
		zw.Close()
		bad := filepath.Join(priv, "ab", strings.Repeat("c", 38))
		os.MkdirAll(filepath.Dir(bad), 0o755)
		os.WriteFile(bad, z.Bytes(), 0o444)
		if _, err := c.Absorb(ctx, priv); err == nil {
			t.Errorf("%q: absorbed", forge)
		}
		if _, err := c.RevParseAlone(ctx, tip); err == nil {
			t.Errorf("%q: the commit came in beside it", forge)
		}
	}
}

// Missing is true only for an id the store lacks; a fresh note is taken
// once.
func TestTakeFresh(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	ctx := context.Background()
	head := commitFiles(t, c, "", "one", map[string]string{"a": "a\n"})
	absent := strings.Repeat("1", len(head))
	if c.Missing(ctx, head) || !c.Missing(ctx, absent) {
		t.Fatalf("Missing(head) = %v, Missing(absent) = %v", c.Missing(ctx, head), c.Missing(ctx, absent))
	}
	if c.TakeFresh(head) {
		t.Error("a commit never noted is fresh")
	}
	c.NoteFresh(absent)
	if !c.WithEnv(testEnv()).TakeFresh(absent) || c.TakeFresh(absent) {
		t.Error("a fresh note is not taken exactly once, by any client of the repository")
	}
}

// looseObject writes the loose object typ body in the object store dir as
// git writes one (zlib of "typ len\x00body", named after its SHA-1) and
// returns its id.
func looseObject(t *testing.T, dir, typ, body string) [sha1.Size]byte {
	t.Helper()
	raw := fmt.Sprintf("%s %d\x00%s", typ, len(body), body)
	id := sha1.Sum([]byte(raw))
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write([]byte(raw))
	zw.Close()
	name := fmt.Sprintf("%x", id)
	p := filepath.Join(dir, name[:2], name[2:])
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, z.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
	return id
}
