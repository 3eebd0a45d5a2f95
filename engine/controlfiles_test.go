package engine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Claudopilot's control files (v0.x's .claudopilot/control/, 1.0's
// .claudopilot/.run/control/) are read by a running driver: <id>.poke
// asks the loop to poke id's worker, <id>.retry sets a [blocked] phase
// back to [pending]; each file goes once read, an unknown one with a
// warning.
func TestControlFiles(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	rm := filepath.Join(top, "roadmap")
	ctl := filepath.Join(top, ".claudopilot", ControlDir)
	ctlV1 := filepath.Join(top, ".claudopilot", filepath.FromSlash(ControlDirV1)) // Claudopilot 1.0's
	for _, d := range []string{rm, ctl, ctlV1} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, body string) {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(rm, "EXECUTION-MANIFEST.md"), "1. [blocked] **p1** — one\n2. [pending] **p2** — two\n")
	write(filepath.Join(rm, "p1.md"), "# p1\n")
	write(filepath.Join(rm, "p2.md"), "# p2\n")
	for _, n := range []string{"p2.poke", "p2.kick"} {
		write(filepath.Join(ctl, n), "\n")
	}
	write(filepath.Join(ctlV1, "p1.retry"), "\n")
	var log strings.Builder
	pokes := controlFiles{dirs: []string{ctl, ctlV1}, roadmapDir: rm}.read(context.Background(), &log)
	if !slices.Equal(pokes, []string{"p2"}) {
		t.Errorf("pokes %v", pokes)
	}
	if m, _ := os.ReadFile(filepath.Join(rm, "EXECUTION-MANIFEST.md")); !strings.Contains(string(m), "[pending] **p1**") {
		t.Errorf("p1 not retried:\n%s\n%s", m, log.String())
	}
	if !strings.Contains(log.String(), `p2.kick: unknown action "kick"`) {
		t.Errorf("log:\n%s", log.String())
	}
	for _, d := range []string{ctl, ctlV1} {
		if left, _ := os.ReadDir(d); len(left) != 0 {
			t.Errorf("%d control files left in %s", len(left), d)
		}
	}
}
