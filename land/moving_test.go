package land_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/land"
)

// A human committing on the base during every merge gate: the merge used to
// give up after 5 rounds with an error that ended the run. Now it hands
// back a wait ("the base keeps moving"), and lands once the base settles.
func TestMergeWaitsWhileTheBaseKeepsMoving(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"branch.txt": "b\n"})
	state := t.TempDir()
	// A Merge tries twice here (attempts, 5, in a run: each try is
	// about nine processes). The gate plays the human: its first 3 runs
	// each commit on main, one more than a Merge tries, so the second
	// Merge too sees the base move once before it lands. Its count is
	// read by the shell's read, not a cat: no process.
	land.SetAttempts(f.owner, 2)
	j := job("p1", "first phase", tip)
	j.Gate = "n=0; read -r n < '" + state + "/n' 2>/dev/null; n=$((n + 1)); echo $n > '" + state + "/n'\n" +
		"if [ $n -le 3 ]; then\n" +
		"  echo $n > '" + f.top + "/human.txt'\n" +
		"  if [ $n -eq 1 ]; then git -C '" + f.top + "' add human.txt || exit 9; fi\n" +
		// human.txt tracked, a commit of the path is one process.
		"  git -C '" + f.top + "' commit -q -m \"human $n\" human.txt || exit 9\n" +
		"fi\n"

	out := f.owner.Merge(f.ctx, j)
	if out.OK || out.Err != nil || !strings.Contains(out.Waiting, "the base keeps moving (main moved during each of the last 2 tries)") {
		t.Fatalf("outcome = %+v, want a wait: the base keeps moving", out)
	}
	f.refused(out, "p1", f.rev("main"))
	f.mustMerge(j)
	if got := f.gitIn(f.top, "log", "-1", "--format=%s", "main^1"); got != "human 3" {
		t.Errorf("the merge's first parent is %q, want the human's last commit", got)
	}
	b, _ := os.ReadFile(filepath.Join(state, "n"))
	if n := strings.TrimSpace(string(b)); n != "4" {
		t.Errorf("the gate ran %s times, want 4 (each new base tip gated once)", n)
	}
	for _, l := range f.status() {
		if !strings.HasSuffix(l, manifestRel) {
			t.Errorf("git status after the merge: %q", l)
		}
	}
}

// A merge waiting on the user's files hands back a watch of them: it
// fires once they change (here: reverted, and a blocking untracked file in
// a folder the merge adds removed with its folder).
func TestMergeWaitWatchesTheCheckout(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	// What wakes the watch is the point here, not the coalescing of a
	// burst (a second each, three seconds of this test's wall before).
	land.SetDebounce(f.owner, 10*time.Millisecond)
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"a.txt": "a from p1\n", "feature/new.txt": "p1's\n"})
	for _, tc := range []struct {
		name  string
		dirty func()
		clean func()
	}{
		{"modified", func() { f.write(f.top, "a.txt", "the user's\n") }, func() { f.gitIn(f.top, "checkout", "--", "a.txt") }},
		{"untracked", func() { f.write(f.top, "feature/new.txt", "the user's\n") }, func() { os.RemoveAll(filepath.Join(f.top, "feature")) }},
		{"staged", func() { f.write(f.top, "a.txt", "staged\n"); f.gitIn(f.top, "add", "a.txt") }, func() { f.gitIn(f.top, "reset", "-q", "--", "a.txt"); f.gitIn(f.top, "checkout", "--", "a.txt") }},
	} {
		tc.dirty()
		out := f.owner.Merge(f.ctx, job("p1", "first phase", tip))
		if len(out.Wait) == 0 || out.Changed == nil {
			t.Fatalf("%s: outcome = %+v, want a wait with a watch", tc.name, out)
		}
		tc.clean()
		select {
		case <-out.Changed:
		case <-time.After(time.Minute):
			t.Fatalf("%s: the watch never fired", tc.name)
		}
	}
	f.mustMerge(job("p1", "first phase", tip))
}
