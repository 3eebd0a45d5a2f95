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
	t.Parallel()
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

// The put-back follows no link an agent plants: a link where the old code
// wrote its temp file (config.claudopilot-restore) is left alone, and the
// file outside it keeps its bytes.
func TestProtectRestoreFollowsNoLink(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	ctx := context.Background()
	common := filepath.Join(c.Dir, ".git")
	if err := c.Protect(ctx); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(outside, []byte("the user's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink(outside, filepath.Join(common, "config.claudopilot-restore"))
	want := readFile(t, common, "config")
	os.Chmod(filepath.Join(common, "config"), 0o600)
	f, _ := os.OpenFile(filepath.Join(common, "config"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("[core]\n\tfsmonitor = touch /tmp/evil\n")
	f.Close()
	if _, err := c.Git(ctx, "status"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, common, "config"); got != want {
		t.Errorf("config not put back: %q", got)
	}
	if fi, _ := os.Stat(filepath.Join(common, "config")); fi.Mode().Perm() != 0o644 {
		t.Errorf("config's mode %v, want the kept 0644", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(outside); string(b) != "the user's\n" {
		t.Errorf("the put-back wrote through a planted link: %q", b)
	}
}
