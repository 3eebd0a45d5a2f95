package worktree

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// ReplaceFile (no temporary index) writes the same tree as ReplaceFiles,
// at the top level, in a folder (the manifest in roadmap/), for an
// executable, and falls back for a path that is not there yet.
func TestReplaceFileMatchesReplaceFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	writeFile(t, c.Dir, "bin/run.sh", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(c.Dir, "bin/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	head := commitFiles(t, c, "", "files", map[string]string{"roadmap/EXECUTION-MANIFEST.md": "a\n", "roadmap/p.md": "p\n", "a/b/c/d.txt": "d\n", "top.txt": "t\n"})
	for _, p := range []string{"roadmap/EXECUTION-MANIFEST.md", "a/b/c/d.txt", "top.txt", "bin/run.sh", "new/file.txt", "a/b"} {
		want, werr := c.ReplaceFiles(ctx, head, map[string][]byte{p: []byte("new\n")}, nil)
		got, gerr := c.ReplaceFile(ctx, head, p, []byte("new\n"))
		if got != want || (werr == nil) != (gerr == nil) {
			t.Errorf("ReplaceFile(%s) = %s, %v; ReplaceFiles = %s, %v", p, got, gerr, want, werr)
		}
		if gerr == nil {
			if fsck := mustGit(t, c, "", "ls-tree", "-r", got); fsck == "" {
				t.Errorf("tree %s is empty", got)
			}
		}
	}
}
