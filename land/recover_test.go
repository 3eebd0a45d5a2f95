package land_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/land"
)

// A driver killed after moving the base ref but before (or while) bringing
// the checkout forward: the next start finishes the move, never touching
// the live manifest, and forgets the record.
func TestRecoverFinishesACheckoutMove(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	base := f.rev("main")
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"feature/f.txt": "feature\n", "a.txt": "a from p1\n"})
	live := manifestSrc + "\nA human's note.\n"
	f.write(f.top, manifestRel, live)
	rec, _ := json.Marshal(map[string]any{"ref": "refs/heads/main", "dir": f.top, "old": base, "new": tip, "skip": []string{manifestRel}})
	if err := os.MkdirAll(f.layout.StateDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(f.layout.StateDir(), "advance.json")
	if err := os.WriteFile(marker, rec, 0o644); err != nil {
		t.Fatal(err)
	}
	f.gitIn(f.top, "update-ref", "refs/heads/main", tip, base) // then the driver died

	if err := land.Recover(f.ctx, f.git, f.layout); err != nil {
		t.Fatal(err)
	}
	if got := f.read(f.top, "feature/f.txt"); got != "feature\n" {
		t.Errorf("feature/f.txt = %q", got)
	}
	if !exists(filepath.Join(f.top, "roadmap/DONE_p1-first.md")) || exists(filepath.Join(f.top, "roadmap/p1-first.md")) {
		t.Error("the doc rename did not reach the checkout")
	}
	if got := f.read(f.top, manifestRel); got != live {
		t.Errorf("live manifest changed:\n%s", got)
	}
	for _, l := range f.status() {
		if !strings.HasSuffix(l, manifestRel) {
			t.Errorf("git status after recovery: %q", l)
		}
	}
	if exists(marker) {
		t.Error("the record of the move is still there")
	}
	// Nothing to do the second time.
	if err := land.Recover(f.ctx, f.git, f.layout); err != nil {
		t.Fatal(err)
	}
}

// Killed before the ref moved: nothing changes but the record goes.
func TestRecoverBeforeTheRefMoved(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	base := f.rev("main")
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"feature/f.txt": "feature\n"})
	rec, _ := json.Marshal(map[string]any{"ref": "refs/heads/main", "dir": f.top, "old": base, "new": tip})
	if err := os.MkdirAll(f.layout.StateDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(f.layout.StateDir(), "advance.json")
	if err := os.WriteFile(marker, rec, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := land.Recover(f.ctx, f.git, f.layout); err != nil {
		t.Fatal(err)
	}
	if f.rev("main") != base || exists(filepath.Join(f.top, "feature/f.txt")) || exists(marker) {
		t.Error("recovery changed something, or kept its record")
	}
}
