package sandbox

import (
	"context"
	"os"
	"os/exec"
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

// The probe's network launcher had fifos of its own in a mktemp folder of
// TMPDIR, removed by its exit trap: a kill of the driver's process group
// during the probe left it. They are in a reclaimable folder now: the
// next probe removes a killed one's, and leaves nothing of its own.
func TestProbeFifosOfAKilledDriverAreReclaimed(t *testing.T) {
	needBwrap(t)
	slirp, err := exec.LookPath("slirp4netns")
	if err != nil {
		t.Skip("slirp4netns is not installed")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := filepath.Join(tmp, "claudopilot-probe-1234")
	if err := os.MkdirAll(filepath.Join(dead, "net"), 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(dead, old, old)
	if err := (&Config{Outside: slirp}).Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(tmp)
	for _, e := range ents {
		t.Errorf("TMPDIR holds %s", e.Name())
	}
}
