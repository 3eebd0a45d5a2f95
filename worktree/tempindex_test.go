package worktree

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ReplaceFiles' private index lives in a folder of TMPDIR, which a
// driver killed mid-way left there for good (os.MkdirTemp's): the next
// ReplaceFiles removes it, and leaves nothing of its own.
func TestReplaceFilesReclaimsAKilledOnesIndex(t *testing.T) {
	ctx := context.Background()
	c := newRepo(t)
	head := commitFiles(t, c, "", "files", map[string]string{"a": "a\n"})
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := filepath.Join(tmp, "claudopilot-index-1234")
	if err := os.Mkdir(dead, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dead, "index"), []byte("left\n"), 0o600)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(dead, old, old)
	if _, err := c.ReplaceFiles(ctx, head, map[string][]byte{"b": []byte("b\n")}, nil); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(tmp)
	for _, e := range ents {
		t.Errorf("TMPDIR holds %s", e.Name())
	}
}
