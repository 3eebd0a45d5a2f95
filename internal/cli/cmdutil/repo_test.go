package cmdutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWithin(t *testing.T) {
	top := t.TempDir()
	if err := os.MkdirAll(filepath.Join(top, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(top, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want bool
	}{
		{filepath.Join(top, "roadmap"), true},
		{filepath.Join(top, "a", "b", "c"), true},
		{top, true},
		{filepath.Join(link, "new", "dir"), true},
		{filepath.Join(top, "..", "x"), false},
		{filepath.Join(top+"x", "roadmap"), false},
	} {
		if got := PathWithin(top, c.path); got != c.want {
			t.Errorf("PathWithin(%s, %s) = %v, want %v", top, c.path, got, c.want)
		}
	}
}
