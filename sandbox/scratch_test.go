package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A gate's or reviewer's jail has a scratch folder of its own
// (.claudopilot/sandbox/.jail-*), which a killed driver left for good
// (os.MkdirTemp's): the next jail made there removes it; Leave removes
// the jail's own.
func TestJailScratchOfAKilledDriverIsReclaimed(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	r := newRepo(t)
	c := &Config{Gate: true, Scratch: filepath.Join(r.top, ".claudopilot", "sandbox")}
	// A killed driver's: no process holds it, last changed minutes ago.
	dead := filepath.Join(c.Scratch, ".jail-1234")
	if err := os.MkdirAll(filepath.Join(dead, "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(dead, old, old)
	j, err := c.EnterGate(ctx, r.git, r.p1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dead); !os.IsNotExist(err) {
		t.Errorf("the killed driver's %s is still there (%v)", dead, err)
	}
	if _, err := j.Leave(ctx, r.git); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(c.Scratch)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".jail-") {
			t.Errorf("left %s", e.Name())
		}
	}
}
