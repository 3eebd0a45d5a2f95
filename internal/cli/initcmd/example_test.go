package initcmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/work"
)

// TestExampleRuns: init --with-example's roadmap is valid for run (every
// phase has its doc), two waves, phase-02 after phase-01; and each doc's
// first sh block, run as the script agent runs it (sh -e, in the
// checkout, in dependency order), builds phase-02's greeting on phase-01's.
// The script init_example runs it through the driver under
// CLAUDOPILOT_SOAK=1; demo runs the script agent end to end.
func TestExampleRuns(t *testing.T) {
	t.Parallel()
	docs := initDocs(true)
	var names []string
	for _, d := range docs {
		names = append(names, d.name)
	}
	rm, err := roadmap.Parse("/rm", []byte(initManifest(true)), names, roadmap.Options{RequireDocs: true})
	if err != nil {
		t.Fatal(err)
	}
	levels := rm.Levels(func(n *roadmap.Node) manifest.State { return n.State })
	if len(levels) != 2 || len(levels[0]) != 1 || levels[0][0].ID != "phase-01" || len(levels[1]) != 1 || levels[1][0].ID != "phase-02" {
		t.Fatalf("waves %v, want [phase-01] then [phase-02]", levels)
	}
	dir := t.TempDir()
	for _, d := range docs {
		block, ok := work.FirstShellBlock([]byte(d.text))
		if !ok {
			t.Fatalf("%s has no sh block", d.name)
		}
		cmd := exec.Command("sh", "-e", "-c", block)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s's block: %v\n%s", d.name, err, out)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "hello", "phase-02.txt"))
	if want := "hello from phase-01\nand from phase-02, which ran after it\n"; err != nil || string(b) != want {
		t.Fatalf("hello/phase-02.txt = %q (%v), want %q", b, err, want)
	}
}
