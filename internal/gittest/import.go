package gittest

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Commit is one commit Import makes: on Ref (a branch, "auto/p1" or
// "refs/heads/auto/p1"), whose tip becomes it, with parent From (any
// revision, for example "main^0"; "" = Ref's tip as this Import left
// it, or no parent: a Ref that exists before the Import needs From).
// Merge names further parents (any revision or mark, as From), for a
// merge commit whose tree is From's with the changes below.
// Renames (old → new path) apply first, then Delete, then Files
// (path → content, mode 100644; Exec paths 100755), then Links (path →
// a symbolic link's target, mode 120000).
type Commit struct {
	Ref, From, Message string
	Merge              []string
	Renames            [][2]string
	Delete             []string
	Files              map[string]string
	Exec               []string
	Links              map[string]string
}

// Import makes commits in the repository at dir (a worktree or a bare
// repository) and returns their hashes in order: written from Go as
// loose objects and loose refs, no process (importLoose), the objects
// those `git fast-import` writes for the same input; where importLoose
// does not handle the repository or the input, with ONE `git
// fast-import` (its objects in one pack). `git add` + `git commit` +
// `git rev-parse` are three processes per commit (a git process costs
// ~5-13 ms of CPU here), and a `git worktree add -b` four; a test that
// needs a branch with a worktree imports the commit and adds the
// worktree of the existing branch. Nothing is checked out: the index
// and the files of a worktree on Ref do not follow. Identity and dates
// come from env's GIT_COMMITTER_* / GIT_AUTHOR_* (the time is now).
func Import(t testing.TB, env []string, dir string, commits ...Commit) []string {
	t.Helper()
	when := strconv.FormatInt(time.Now().Unix(), 10) + " +0000"
	if hashes, ok := importLoose(env, dir, commits, when); ok {
		return hashes
	}
	return importFast(t, env, dir, commits, when)
}

// importFast is Import by git fast-import.
func importFast(t testing.TB, env []string, dir string, commits []Commit, when string) []string {
	t.Helper()
	marks := filepath.Join(t.TempDir(), "marks")
	cmd := exec.Command("git", "-c", "fastimport.unpackLimit=0", "fast-import", "--quiet", "--export-marks="+marks)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = bytes.NewReader(importStream(env, commits, when))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git fast-import in %s: %v\n%s", dir, err, out)
	}
	b, err := os.ReadFile(marks)
	if err != nil {
		t.Fatal(err)
	}
	hashes := make([]string, len(commits))
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		mark, hash, _ := strings.Cut(sc.Text(), " ")
		if n, err := strconv.Atoi(strings.TrimPrefix(mark, ":")); err == nil && n >= 1 && n <= len(commits) {
			hashes[n-1] = hash
		}
	}
	for i, h := range hashes {
		if h == "" {
			t.Fatalf("git fast-import in %s: no hash for commit %d", dir, i+1)
		}
	}
	return hashes
}

// Stream is Import's input for git fast-import, for a script that
// imports the commits itself (a test's "someone else pushes" at a given
// moment): commit i is mark :i+1.
func Stream(env []string, commits ...Commit) []byte {
	return importStream(env, commits, strconv.FormatInt(time.Now().Unix(), 10)+" +0000")
}

// importStream is fast-import's input for commits at when ("<seconds>
// +0000"): commit i is mark :i+1.
func importStream(env []string, commits []Commit, when string) []byte {
	get := func(k, def string) string {
		for _, kv := range slices.Backward(env) {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return def
	}
	var b bytes.Buffer
	for i, c := range commits {
		ref := c.Ref
		if !strings.HasPrefix(ref, "refs/") {
			ref = "refs/heads/" + ref
		}
		fmt.Fprintf(&b, "commit %s\nmark :%d\n", ref, i+1)
		fmt.Fprintf(&b, "author %s <%s> %s\n", get("GIT_AUTHOR_NAME", "t"), get("GIT_AUTHOR_EMAIL", "t@x"), when)
		fmt.Fprintf(&b, "committer %s <%s> %s\n", get("GIT_COMMITTER_NAME", "t"), get("GIT_COMMITTER_EMAIL", "t@x"), when)
		fmt.Fprintf(&b, "data %d\n%s\n", len(c.Message), c.Message)
		if c.From != "" {
			fmt.Fprintf(&b, "from %s\n", c.From)
		}
		for _, m := range c.Merge {
			fmt.Fprintf(&b, "merge %s\n", m)
		}
		for _, r := range c.Renames {
			fmt.Fprintf(&b, "R %s %s\n", quote(r[0]), quote(r[1]))
		}
		for _, p := range c.Delete {
			fmt.Fprintf(&b, "D %s\n", quote(p))
		}
		paths := make([]string, 0, len(c.Files))
		for p := range c.Files {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		for _, p := range paths {
			mode := "100644"
			if slices.Contains(c.Exec, p) {
				mode = "100755"
			}
			fmt.Fprintf(&b, "M %s inline %s\ndata %d\n%s\n", mode, quote(p), len(c.Files[p]), c.Files[p])
		}
		for _, p := range slices.Sorted(maps.Keys(c.Links)) {
			fmt.Fprintf(&b, "M 120000 inline %s\ndata %d\n%s\n", quote(p), len(c.Links[p]), c.Links[p])
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

// quote is fast-import's C-style quoting of a path: only the quote, the
// backslash and the newline need escapes; other bytes stay as they are.
func quote(p string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(p) + `"`
}
