package engine_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/worktree"
)

// A roadmap whose EXECUTION-MANIFEST.md is a symlink: the layout names the
// file it points to (plans/...) as the manifest the driver commits and
// flips (land TestMergeThroughASymlinkedManifest lands a phase through
// it); a link that leaves the repository, or leads nowhere, is a manifest
// problem (exit 3) before anything is made. The script
// run_symlink_manifest runs both through the driver under
// CLAUDOPILOT_SOAK=1.
func TestMakeLayoutSymlinkedManifest(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	top := filepath.Join(root, "repo")
	for _, d := range []string{"roadmap", "plans", "out", "../elsewhere"} {
		if err := os.MkdirAll(filepath.Join(top, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"plans/EXECUTION-MANIFEST.md", "../elsewhere/EXECUTION-MANIFEST.md"} {
		if err := os.WriteFile(filepath.Join(top, p), []byte("1. [pending] **phase-01** — one (deps: none)\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(dir, to string) string {
		if err := os.Symlink(to, filepath.Join(top, dir, roadmap.ManifestName)); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(top, dir)
	}
	git := &worktree.Client{Dir: top}
	l, err := engine.MakeLayout(git, link("roadmap", "../plans/EXECUTION-MANIFEST.md"), "main")
	if err != nil || l.ManifestRel() != "plans/EXECUTION-MANIFEST.md" {
		t.Errorf("a link inside the repository: manifest %q, %v; want plans/EXECUTION-MANIFEST.md", l.ManifestRel(), err)
	}
	_, err = engine.MakeLayout(git, link("out", "../../elsewhere/EXECUTION-MANIFEST.md"), "main")
	var inv *roadmap.InvalidError
	if !errors.As(err, &inv) || !strings.Contains(err.Error(), "elsewhere/EXECUTION-MANIFEST.md, outside the repository") {
		t.Errorf("a link outside: %v; want a manifest problem naming where it leads", err)
	}
	if err := os.MkdirAll(filepath.Join(top, "dangling"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = engine.MakeLayout(git, link("dangling", "../nowhere.md"), "main")
	if !errors.As(err, &inv) || !strings.Contains(err.Error(), "a symlink that leads nowhere") {
		t.Errorf("a dangling link: %v; want a manifest problem", err)
	}
}
