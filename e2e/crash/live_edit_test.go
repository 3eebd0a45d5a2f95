package crash

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/internal/e2e"
)

// The live-edit test edits the manifest many times while a run goes on, the
// way people and editors do (rename over the file, or rewrite in place),
// and checks that every edit survives the driver's own writes, that a new
// phase is picked up, and that a parked phase flipped back to [pending] is
// retried.

const liveManifest = `# Live edits

**Status:** in-progress

1. [pending] **a1** — one (deps: none)
2. [pending] **a2** — two (deps: a1)
3. [pending] **a3** — three (deps: none)
4. [pending] **flaky** — fails until fixed (deps: none)
5. [pending] **hold** — keeps the run going until the test is done editing (deps: none)
6. [pending] **after** — waits on flaky (deps: flaky)

## Notes
`

// liveAgent fails for "flaky" until the file named by $FIXED exists.
const liveAgent = `#!/bin/sh
set -e
if [ "$CLAUDOPILOT_PHASE" = hold ]; then
  i=0; while [ ! -f "$RELEASE" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done
fi
if [ "$CLAUDOPILOT_PHASE" = flaky ] && [ ! -f "$FIXED" ]; then
  echo "flaky is broken"; exit 1
fi
echo "$CLAUDOPILOT_PHASE" > "$CLAUDOPILOT_PHASE.txt"
sleep 0.3
d=$(dirname "$CLAUDOPILOT_PHASE_DOC"); b=$(basename "$CLAUDOPILOT_PHASE_DOC")
git add -A && git mv "$CLAUDOPILOT_PHASE_DOC" "$d/DONE_$b" && git commit -qm "$CLAUDOPILOT_PHASE"
`

func TestLiveEdits(t *testing.T) {
	if !e2e.Soak() {
		t.Skip("proven in package tests (roadmap TestSetStateWaitsForInPlaceSave, TestReplaceKeepsARenameSaveBeforeTheSwap, TestLateWriteIntoOldInodeMergedBack, TestMergeLateNeverOverANewerEdit: an edit, in place or by rename, survives the driver's writes; scheduler TestEditAddsPhase, TestEditRetriesParkedPhase, TestEditDoesNotUndoDeferredWrites, TestEditReadsTheStore: a new phase picked up, a parked one flipped to [pending] retried); script run_merged_stays_merged runs the watcher against the driver's writes end to end; CLAUDOPILOT_SOAK=1 runs it")
	}
	if testing.Short() {
		t.Skip("runs the driver for several seconds")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	t.Parallel()
	bin := e2e.SelfAs(t, "claudopilot")
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	fixed := filepath.Join(dir, "fixed")
	release := filepath.Join(dir, "release")
	env := append(e2e.Env(dir, filepath.Join(dir, "trace")), "FIXED="+fixed, "RELEASE="+release)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(repo, "roadmap"), 0o755))
	mpath := filepath.Join(repo, "roadmap", "EXECUTION-MANIFEST.md")
	must(os.WriteFile(mpath, []byte(liveManifest), 0o644))
	for _, id := range []string{"a1", "a2", "a3", "flaky", "hold", "after", "late"} {
		// late's doc is committed now; its phase line arrives mid-run.
		must(os.WriteFile(filepath.Join(repo, "roadmap", id+".md"), []byte("# "+id+"\n"), 0o644))
	}
	agent := filepath.Join(dir, "agent.sh")
	must(os.WriteFile(agent, []byte(liveAgent), 0o755))
	e2e.Git(t, repo, env, "init", "-q", "-b", "main")
	e2e.Git(t, repo, env, "add", "-A")
	e2e.Git(t, repo, env, "commit", "-qm", "roadmap")

	cmd := exec.Command(bin, "run", "--base", "main", "--agent", agent, "--keep-going",
		"--max-supervisor-attempts", "0", "--max-parallel", "3", "--poll-seconds", "1", "roadmap")
	cmd.Dir, cmd.Env = repo, env
	// Output goes to a file the test can read while the driver writes it.
	outFile, err := os.Create(filepath.Join(dir, "out.log"))
	must(err)
	defer outFile.Close()
	cmd.Stdout, cmd.Stderr = outFile, outFile
	out := outputOf(outFile.Name())
	must(cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	edit := func(f func(string) string, byRename bool) {
		t.Helper()
		b, err := os.ReadFile(mpath)
		must(err)
		nb := []byte(f(string(b)))
		// A careful editor: when the file changed since it was read (the
		// driver wrote a state), edit the new content instead. Saving the
		// stale buffer would revert that state, which the driver must take
		// as the human's own flip (a retry), and the test would race it.
		for {
			now, err := os.ReadFile(mpath)
			must(err)
			if bytes.Equal(now, b) {
				break
			}
			b, nb = now, []byte(f(string(now)))
		}
		if byRename {
			tmp := mpath + ".swp"
			must(os.WriteFile(tmp, nb, 0o644))
			must(os.Rename(tmp, mpath))
		} else {
			must(os.WriteFile(mpath, nb, 0o644))
		}
	}
	// until waits for cond, polling; no fixed bound (60 s broke at load
	// 30-60 while the driver worked: TestLiveEdits "timed out waiting for
	// late to be merged" with a worker of a 0.3 s agent taking 47 s): the
	// wait fails when the driver exits, when its journal is still for
	// stallAfter (stallReport says what it waits for) or at e2e.Bound.
	jn := &journalTail{path: filepath.Join(repo, ".claudopilot", "state", "journal.jsonl")}
	watch := newStallWatch(jn, out.String, stallAfter, lockStall)
	deadline := time.Now().Add(e2e.Bound(t))
	until := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			hung := watch.stalled()
			if hung || time.Now().After(deadline) {
				why := stallReport(watch, repo, out.String())
				cmd.Process.Kill()
				<-exited
				b, _ := os.ReadFile(mpath)
				t.Fatalf("no %s: %s\nthe manifest:\n%s\nthe output:\n%s", what, why, b, out.String())
			}
			select {
			case err := <-exited:
				b, _ := os.ReadFile(mpath)
				t.Fatalf("driver exited (%v) before %s:\n%s\n%s", err, what, b, out.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	waitFor := func(what string, cond func(string) bool) {
		t.Helper()
		until(what, func() bool {
			b, _ := os.ReadFile(mpath)
			return cond(string(b))
		})
	}

	// Edits begin once the run has read the manifest and started.
	waitFor("the run to start", func(s string) bool { return strings.Contains(s, "[running]") })
	// Notes added one by one while phases start and merge.
	const notes = 12
	for i := 0; i < notes; i++ {
		edit(func(s string) string { return s + fmt.Sprintf("- note %d\n", i) }, i%2 == 0)
		time.Sleep(40 * time.Millisecond)
	}
	// A new phase mid-run.
	edit(func(s string) string {
		return strings.Replace(s, "## Notes\n", "6. [pending] **late** — added mid-run (deps: a1)\n\n## Notes\n", 1)
	}, true)
	// An invalid edit is reported and ignored; the next good one wins.
	edit(func(s string) string {
		return strings.Replace(s, "**a3** — three", "**a3** — three (deps: nope", 1)
	}, true)
	until(`"manifest edit ignored" in the output`, func() bool { return strings.Contains(out.String(), "manifest edit ignored") })
	edit(func(s string) string {
		return strings.Replace(s, "**a3** — three (deps: nope", "**a3** — three", 1)
	}, true)

	// flaky parks (keep-going), and so does its dependent; fix it and
	// flip it back by hand.
	waitFor("flaky to be blocked", func(s string) bool {
		return strings.Contains(s, "[blocked] **flaky**") && strings.Contains(s, "[blocked] **after**")
	})
	must(os.WriteFile(fixed, nil, 0o644))
	edit(func(s string) string { return strings.Replace(s, "[blocked] **flaky**", "[pending] **flaky**", 1) }, false)
	waitFor("late to be merged", func(s string) bool { return strings.Contains(s, "[merged] **late**") })
	must(os.WriteFile(release, nil, 0o644))

	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("run failed: %v\n%s", err, out.String())
		}
	case <-time.After(e2e.Bound(t)):
		cmd.Process.Kill()
		t.Fatalf("run did not end:\n%s", out.String())
	}
	b, _ := os.ReadFile(mpath)
	final := string(b)
	for i := 0; i < notes; i++ {
		if !strings.Contains(final, fmt.Sprintf("- note %d\n", i)) {
			t.Errorf("edit %d lost:\n%s", i, final)
		}
	}
	for _, id := range []string{"a1", "a2", "a3", "flaky", "hold", "after", "late"} {
		if !strings.Contains(final, "[merged] **"+id+"**") {
			t.Errorf("%s not merged:\n%s\n%s", id, final, out.String())
		}
	}
	if !strings.Contains(out.String(), "manifest edit ignored") {
		t.Errorf("the invalid edit was not reported:\n%s", out.String())
	}
	if c := e2e.Git(t, repo, env, "show", "main:late.txt"); strings.TrimSpace(c) != "late" {
		t.Errorf("late's work is not on main: %q", c)
	}
}

// outputOf reads a log file another process is writing.
type outputOf string

func (o outputOf) String() string {
	b, _ := os.ReadFile(string(o))
	return string(b)
}
