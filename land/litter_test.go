package land_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/land"
	"github.com/claudopilot/claudopilot/work"
)

// What kills leave of a landed phase is swept at the end of a run (and at
// its start): the driver's notes about the phase's worktree, a worktree
// folder whose removal a kill cut off (git no longer lists it, or lists it
// without its .git link), and an earlier run's record of a base move. A
// record this run wrote stays for status.
func TestCleanupLandedSweepsLitter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"a.txt": "a by p1\n"})
	f.mustMerge(job("p1", "first", tip))
	f.owner.Wait() // its registration pruned, as after a run
	for _, p := range work.PhaseNotes(f.layout, "p1") {
		f.write(filepath.Dir(p), filepath.Base(p), "left by a killed driver\n")
	}
	// p1's removal cut off: a registration left, the folder half deleted
	// with its .git link gone.
	wt := f.layout.Worktree("p1")
	f.gitIn(f.top, "worktree", "add", "-q", "--detach", wt, "main")
	if err := os.Remove(filepath.Join(wt, ".git")); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(wt, "a.txt"))
	earlier := land.BaseMove{Branch: "main", From: "a", To: "b", At: time.Now().Add(-time.Hour).UTC()}
	writeMove(t, f.layout.StateDir(), earlier)

	if err := f.owner.CleanupLanded(f.ctx, []string{"p1"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(work.PhaseNotes(f.layout, "p1"), wt, land.BaseMovedPath(f.layout)) {
		if exists(p) {
			t.Errorf("%s is left", p)
		}
	}
	if out := f.gitIn(f.top, "worktree", "list", "--porcelain"); strings.Contains(out, wt) {
		t.Errorf("the registration is left:\n%s", out)
	}

	mine := land.BaseMove{Branch: "main", From: "b", To: "c", At: time.Now().Add(time.Minute).UTC()}
	writeMove(t, f.layout.StateDir(), mine)
	if err := f.owner.CleanupLanded(f.ctx, []string{"p1"}); err != nil {
		t.Fatal(err)
	}
	if m, _ := land.LastBaseMove(f.layout); m == nil || m.To != "c" {
		t.Errorf("this run's record of a base move = %+v, want it kept", m)
	}
}

func writeMove(t *testing.T, dir string, m land.BaseMove) {
	t.Helper()
	b := []byte(`{"branch":"` + m.Branch + `","from":"` + m.From + `","to":"` + m.To + `","at":"` + m.At.Format(time.RFC3339Nano) + `"}`)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "base-moved.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
