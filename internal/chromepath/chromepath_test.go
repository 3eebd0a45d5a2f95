package chromepath

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFindPrefersTheHeadlessShell: the headless shell is taken before
// chromium when both are on PATH, chromium alone is found, and none gives "".
func TestFindPrefersTheHeadlessShell(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	if got := Find(); got != "" {
		t.Errorf("empty PATH: %q, want none", got)
	}
	for _, name := range []string{"chromium", "chromium-headless-shell"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if got, want := Find(), filepath.Join(dir, name); got != want {
			t.Errorf("with %s on PATH: %q, want %q", name, got, want)
		}
	}
}
