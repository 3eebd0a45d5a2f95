package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The stray-write watch looks only where a stray write could be told
// apart: the base checkout, and worktrees no other attempt runs in. At
// MAX_PARALLEL n, each attempt looked at the n-1 others as it started
// (n² statuses per n attempts; issue 25 §1); now an attempt looks, at
// its end, only at the checkouts the watch saw change. A write
// to an idle worktree is still found, one to a busy worktree is its own
// agent's.
func TestStrayWatchLooksOnlyWhereNoAttemptRuns(t *testing.T) {
	needGit(t)
	r := newRepo(t)
	ctx := context.Background()
	p3 := filepath.Join(r.top, ".claudopilot", "worktrees", "p3")
	r.gitOut(t, r.top, "worktree", "add", "-q", "-b", "auto/p3", p3)
	os.WriteFile(filepath.Join(r.top, ".git", "info", "exclude"), []byte("/.claudopilot/\n"), 0o644) // as the driver has it
	w := &Watch{}
	busy := w.Begin(ctx, r.git, r.top, r.p2) // p2's attempt runs
	trace := filepath.Join(t.TempDir(), "trace")
	traced := r.git.WithEnv(append(r.env, "GIT_TRACE="+trace))
	s := w.Begin(ctx, traced, r.top, r.p1)
	os.WriteFile(filepath.Join(r.p2, "own"), []byte("p2's agent\n"), 0o644)
	os.WriteFile(filepath.Join(p3, "stray"), []byte("p1's agent\n"), 0o644)
	os.WriteFile(filepath.Join(r.top, "stray"), []byte("p1's agent\n"), 0o644)
	got := w.End(ctx, traced, r.top, s)
	w.End(ctx, r.git, r.top, busy)
	want := []string{filepath.Join(p3, "stray"), filepath.Join(r.top, "stray")}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("found %q, want %q", got, want)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "trace: built-in: git status") {
			dirs = append(dirs, l)
		}
	}
	// The base checkout and p3, at the end only (both were written);
	// never p2.
	if len(dirs) != 2 || strings.Contains(string(b), "chdir to '"+r.p2) {
		t.Errorf("%d statuses, want 2 (the base checkout and p3, at the end):\n%s", len(dirs), b)
	}
}
