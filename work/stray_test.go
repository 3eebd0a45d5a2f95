package work_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/sandbox"
)

// Without the sandbox, an agent's writes outside its worktree are found
// and named (issue 13): a new file in the base checkout, a change to a
// file a human left dirty there, and a file in another phase's worktree
// in which nothing ran meanwhile. The manifest, which the driver itself
// rewrites, is not reported, and the phase still finishes.
func TestRunReportsWritesOutsideTheWorktree(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	other := filepath.Join(f.top, ".claudopilot", "worktrees", "p2")
	f.gitIn(f.top, "worktree", "add", "-q", "-b", "auto/p2", other, "main")
	f.write(f.top, "notes.txt", "a human's unsaved notes\n")
	f.runner.Agent = f.agent(`
echo stray > "$TOP/stray.txt"
echo overwritten > "$TOP/notes.txt"
echo stray > "$OTHER/stray.txt"
echo touched >> "$TOP/` + manifestRel + `"
echo work > work.txt
` + doneBody)
	f.runner.Env = append(f.runner.Env, "TOP="+f.top, "OTHER="+other)
	f.runner.Stray = &sandbox.Watch{}
	o := f.run(job())
	if !o.OK {
		t.Fatalf("outcome %+v", o)
	}
	got := strings.Join(o.Warnings, "\n")
	for _, p := range []string{filepath.Join(f.top, "stray.txt"), filepath.Join(f.top, "notes.txt"), filepath.Join(other, "stray.txt")} {
		if !strings.Contains(got, "outside its worktree: "+p+" changed while the attempt ran") {
			t.Errorf("no warning names %s:\n%s", p, got)
		}
	}
	if strings.Contains(got, manifestRel) || len(o.Warnings) != 3 {
		t.Errorf("want exactly the three files, not the manifest:\n%s", got)
	}
	if log := f.read(o.LogPath); !strings.Contains(log, "claudopilot: warning: outside its worktree: "+filepath.Join(f.top, "stray.txt")) {
		t.Errorf("the attempt's log does not say it:\n%s", log)
	}
}

// An agent that stays in its worktree gives no warning, whatever a human
// left dirty in the base checkout before it started.
func TestRunNoStrayWarningForAWellBehavedAgent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.write(f.top, "notes.txt", "a human's unsaved notes\n")
	f.runner.Agent = f.agent("echo work > work.txt\n" + doneBody)
	f.runner.Stray = &sandbox.Watch{}
	o := f.run(job())
	if !o.OK || len(o.Warnings) != 0 {
		t.Fatalf("outcome %+v, warnings %q", o, o.Warnings)
	}
}

// A worktree removed while the attempt ran (a landed phase's, whose
// removal runs in the background) is not looked at when the attempt ends:
// git no longer lists it, and a status there fails, or reads the base
// checkout's repository from a folder left behind.
func TestStrayWatchSkipsARemovedWorktree(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	other := filepath.Join(f.top, ".claudopilot", "worktrees", "p2")
	f.gitIn(f.top, "worktree", "add", "-q", "-b", "auto/p2", other, "main")
	// An empty folder left, as a removal under way leaves it: git run
	// there would find the base checkout's repository instead.
	f.runner.Agent = f.agent(`git -C "$TOP" worktree remove --force "$OTHER" && mkdir "$OTHER" || exit 30
` + doneBody)
	f.runner.Env = append(f.runner.Env, "TOP="+f.top, "OTHER="+other)
	f.runner.Stray = &sandbox.Watch{}
	trace := filepath.Join(t.TempDir(), "trace")
	f.runner.Git = f.git.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	o := f.run(job())
	if !o.OK || len(o.Warnings) != 0 {
		t.Fatalf("outcome %+v, warnings %q", o, o.Warnings)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	// The leftover check's status of the attempt's own worktree alone:
	// the watch saw nothing change in the base checkout (the removal
	// wrote only under .git and .claudopilot) and p2 is gone.
	if n := strings.Count(string(b), "trace: built-in: git status"); n != 1 {
		t.Errorf("%d git status, want 1:\n%s", n, b)
	}
}
