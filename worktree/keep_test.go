package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// After Protect, a change to the config, hooks/ or info/ that is not the
// driver's own is put back before the next git command and reported; the
// driver's own (git config through the Client, a branch's section dropped
// with it, Exclude) is kept.
func TestProtect(t *testing.T) {
	c := newRepo(t)
	ctx := context.Background()
	common := filepath.Join(c.Dir, ".git")
	start := time.Now()
	if err := c.Protect(ctx); err != nil {
		t.Fatal(err)
	}
	// The driver's own writes.
	if err := c.AppendBranchDescription(ctx, "main", "the driver's"); err != nil {
		t.Fatal(err)
	}
	if err := c.Exclude(ctx, "/.claudopilot/"); err != nil {
		t.Fatal(err)
	}
	// Someone else's: a filter, a hook, a link in info/.
	f, _ := os.OpenFile(filepath.Join(common, "config"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("[filter \"evil\"]\n\tclean = touch /tmp/evil\n")
	f.Close()
	os.WriteFile(filepath.Join(common, "hooks", "post-checkout"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("/etc/passwd", filepath.Join(common, "info", "attributes"))
	if got, err := c.Git(ctx, "config", "--get-regexp", "^filter\\."); err == nil || got != "" {
		t.Errorf("the filter is still configured: %q (git config exits 1 when nothing matches: %v)", got, err)
	}
	if d, _ := c.BranchDescription(ctx, "main"); d != "the driver's" {
		t.Errorf("the driver's own description is %q", d)
	}
	if !strings.Contains(readFile(t, common, "info/exclude"), "/.claudopilot/") {
		t.Error("the driver's exclude line is gone")
	}
	for _, p := range []string{"hooks/post-checkout", "info/attributes"} {
		if _, err := os.Lstat(filepath.Join(common, p)); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
	var got []string
	for _, r := range c.Reverted(start) {
		got = append(got, strings.TrimPrefix(r.Path, common+"/")+" "+r.What)
	}
	want := "config changed, hooks/post-checkout added, info/attributes added"
	if strings.Join(got, ", ") != want {
		t.Errorf("Reverted = %q, want %q", got, want)
	}
	if len(c.Reverted(time.Now())) != 0 {
		t.Error("Reverted since now lists something")
	}
}
