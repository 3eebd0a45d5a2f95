package worktree

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Names are resolved by one long-lived cat-file, not a rev-parse each: 30
// lookups start one git (issue 25 §1: a landing resolved names ~8 times).
// The answers follow the repository as rev-parse's would: a moved branch,
// packed refs, a new branch, an object written after the process started
// (in a new pack), a missing name, a context that ended. The done check's
// reads and the manifest flip's trees go through it too.
func TestResolverAnswersAsRevParse(t *testing.T) {
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	c := newRepo(t)
	defer c.Close()
	shim := t.TempDir()
	log := filepath.Join(shim, "calls")
	script := "#!/bin/sh\necho \"$*\" >>" + log + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(shim, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", shim+string(os.PathListSeparator)+os.Getenv("PATH"))
	ctx := context.Background()
	first := mustGit(t, c, "", "rev-parse", "HEAD")
	for i := 0; i < 30; i++ {
		if got, err := c.RevParse(ctx, "refs/heads/main"); err != nil || got != first {
			t.Fatalf("RevParse main = %q, %v; want %s", got, err, first)
		}
	}
	second := commitFiles(t, c, "", "two", map[string]string{"a.txt": "a\n"})
	if got, err := c.RevParse(ctx, "main"); err != nil || got != second {
		t.Fatalf("after a commit: %q, %v; want %s", got, err, second)
	}
	mustGit(t, c, "", "pack-refs", "--all")
	mustGit(t, c, "", "branch", "side", first)
	if got, err := c.RevParse(ctx, "refs/heads/side"); err != nil || got != first {
		t.Fatalf("new branch after pack-refs: %q, %v; want %s", got, err, first)
	}
	third := commitFiles(t, c, "", "three", map[string]string{"b.txt": "b\n"})
	mustGit(t, c, "", "repack", "-a", "-d", "-q")
	if got, err := c.RevParse(ctx, third+"^{commit}"); err != nil || got != third {
		t.Fatalf("a commit repacked since: %q, %v", got, err)
	}
	if _, err := c.RevParse(ctx, "refs/heads/nope"); !errors.Is(err, ErrNoRev) {
		t.Fatalf("missing branch: %v, want ErrNoRev", err)
	}
	if _, err := c.RevParse(ctx, "main:nope.txt"); !errors.Is(err, ErrNoRev) {
		t.Fatalf("missing path: %v, want ErrNoRev", err)
	}
	for i := 0; i < 5; i++ {
		blobs, err := c.ReadFiles(ctx, "main", "a.txt", "nope.txt", "README.md")
		if err != nil || !blobs[0].OK || string(blobs[0].Data) != "a\n" || blobs[1].OK || string(blobs[2].Data) != "hello\n" {
			t.Fatalf("ReadFiles = %+v, %v", blobs, err)
		}
	}
	if _, err := c.ReadFiles(ctx, "refs/heads/nope", "a.txt"); !errors.Is(err, ErrNoRev) {
		t.Fatalf("ReadFiles of a missing rev: %v, want ErrNoRev", err)
	}
	tree, err := c.ReplaceFile(ctx, "main^{tree}", "a.txt", []byte("A\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := mustGit(t, c, "", "cat-file", "-p", tree+":a.txt"); got != "A" {
		t.Fatalf("ReplaceFile wrote %q", got)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.RevParse(done, "main"); err == nil {
		t.Fatal("a lookup with an ended context succeeded")
	}
	if got, err := c.RevParse(ctx, "main"); err != nil || got != third {
		t.Fatalf("after an ended context: %q, %v; want %s", got, err, third)
	}
	b, _ := os.ReadFile(log)
	var resolvers, others int
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.Contains(l, " cat-file --batch-command"):
			resolvers++
		case strings.Contains(l, " rev-parse --verify"), strings.HasSuffix(l, " cat-file --batch"):
			others++
		}
	}
	if resolvers != 1 || others != 0 {
		t.Errorf("%d cat-file --batch-command and %d rev-parse or cat-file --batch processes for 44 lookups and reads, want 1 and 0", resolvers, others)
	}
}

// A run keeps its resolver past batchIdle unused (KeepResolvers): the idle
// timer's expiry, called here as the timer calls it, closes it only when
// it is not kept; Close ends it whatever the setting.
func TestResolverKeptForTheRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	c.KeepResolvers(true)
	if _, err := c.RevParse(ctx, "HEAD"); err != nil {
		t.Fatal(err)
	}
	r := c.locks().resolverFor(c)
	alive := func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.cmd != nil
	}
	r.expire() // used since: kept by any setting
	r.expire() // unused for batchIdle
	if !alive() {
		t.Fatal("a kept resolver was closed after batchIdle unused")
	}
	c.KeepResolvers(false)
	r.expire()
	if alive() {
		t.Error("the resolver outlived batchIdle unused once no longer kept")
	}
	c.KeepResolvers(true)
	if _, err := c.RevParse(ctx, "HEAD"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if alive() {
		t.Error("Close left the resolver running")
	}
}
