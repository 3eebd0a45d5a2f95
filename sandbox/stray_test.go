package sandbox

import (
	"context"
	"fmt"
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

// watchChildEnv names, in a child process of the test binary, the
// checkout a notifier watches until the test kills it
// (TestKilledWatchLeavesNothing).
const watchChildEnv = "SANDBOX_TEST_WATCH_CHILD"

// watchChild is a driver's stray-write watch that syncs until it is
// killed, perhaps between a sync file's creation and its removal.
func watchChild(top string) int {
	n, err := openNotifier(0, barrierDir(top))
	if err == nil {
		err = n.watch(top)
	}
	if err == nil {
		_, err = n.sync()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("watching")
	for {
		if _, err := n.sync(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
}
