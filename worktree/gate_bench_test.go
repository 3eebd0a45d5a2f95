package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkCleanCheckout measures what the merge gate's checkout costs on
// a 5,000-file repository whose two commits differ in 20 files, with 1,000
// ignored build outputs left by the previous gate run: "reuse" is
// CleanCheckout on the gate worktree (checkout -f of the differing files,
// clean -ffdx), "fresh" a worktree made for each gate and removed after.
//
//	go test -run XXX -bench CleanCheckout -benchtime 20x ./worktree
func BenchmarkCleanCheckout(b *testing.B) {
	ctx := context.Background()
	c := newRepoB(b)
	write := func(dir string, n int, name string) {
		for i := 0; i < n; i++ {
			p := filepath.Join(dir, fmt.Sprintf("d%02d", i%50), fmt.Sprintf(name, i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(fmt.Sprintf("line %d\n", i)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	write(c.Dir, 5000, "f%d.go")
	if err := os.WriteFile(filepath.Join(c.Dir, ".gitignore"), []byte("*.o\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	gitB(b, c, "add", "-A")
	gitB(b, c, "commit", "-q", "-m", "a")
	a := gitB(b, c, "rev-parse", "HEAD")
	for i := 0; i < 20; i++ {
		p := filepath.Join(c.Dir, fmt.Sprintf("d%02d", i), fmt.Sprintf("f%d.go", i))
		if err := os.WriteFile(p, []byte("changed\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	gitB(b, c, "commit", "-q", "-am", "b")
	bb := gitB(b, c, "rev-parse", "HEAD")
	commits := []string{a, bb}
	gate := filepath.Join(b.TempDir(), "gate")

	b.Run("reuse", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if err := c.CleanCheckout(ctx, gate, commits[i%2]); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			write(gate, 1000, "out%d.o")
			b.StartTimer()
		}
	})
	b.Run("fresh", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if err := c.RemoveWorktree(ctx, gate); err != nil {
				b.Fatal(err)
			}
			if err := c.CleanCheckout(ctx, gate, commits[i%2]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func newRepoB(b *testing.B) *Client {
	b.Helper()
	dir := b.TempDir()
	c := &Client{Dir: dir, Env: testEnv()}
	gitB(b, c, "init", "-q", "-b", "main")
	return c
}

func gitB(b *testing.B, c *Client, args ...string) string {
	b.Helper()
	out, err := c.GitIn(context.Background(), "", args...)
	if err != nil {
		b.Fatal(err)
	}
	return out
}
