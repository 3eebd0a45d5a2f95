package crash

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stallAfter is how long a driver round may add nothing to the journal
// before the kill loops end it as hung. A driver waiting on something
// that will never change (an index.lock no live process holds: CI's soak,
// TestCrashResumeStacked/shift1 at stop 34, 1,657 s) journals its wait
// once and then nothing: the round used to wait for go test's own
// deadline (e2e.Bound, 28 minutes) and ate CI's whole clock. A working
// driver journals every launch, end, gate and landing: the longest gap
// measured under load is in the report of the round (longest quiet),
// seconds, not minutes.
const stallAfter = 5 * time.Minute

// stallWatch tells a round that makes progress from one that hangs: a new
// journal line is progress.
type stallWatch struct {
	jn      *journalTail
	after   time.Duration
	n       int       // journal lines at the last progress
	at      time.Time // when it was seen
	longest time.Duration
}

func newStallWatch(jn *journalTail, after time.Duration) *stallWatch {
	return &stallWatch{jn: jn, after: after, n: jn.count(), at: time.Now()}
}

// stalled says whether the journal has not grown for w.after.
func (w *stallWatch) stalled() bool {
	now := time.Now()
	if n := w.jn.count(); n != w.n {
		w.longest = max(w.longest, now.Sub(w.at))
		w.n, w.at = n, now
		return false
	}
	return now.Sub(w.at) >= w.after
}

// quiet is how long the journal has been still.
func (w *stallWatch) quiet() time.Duration { return time.Since(w.at).Round(100 * time.Millisecond) }

// waitLine finds the driver's wait lines ("wait: ...") in its output.
var waitLine = regexp.MustCompile(`(?m)^.*\bwait: .*$`)

// lockPath finds the lock file a wait line names.
var lockPath = regexp.MustCompile(`/\S+\.lock\b`)

// stallReport says why a round is taken for hung: what the driver waits
// for (its wait lines), the state of each lock file they name (gone,
// empty, the driver's own mark, or another's bytes, and its age), the
// processes that run in the repository, and the journal's last lines.
func stallReport(w *stallWatch, repo, out string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "no journal progress for %s (%d lines)\n", w.quiet(), w.n)
	waits := waitLine.FindAllString(out, -1)
	if len(waits) == 0 {
		b.WriteString("the driver printed no wait line\n")
	}
	for _, l := range waits {
		fmt.Fprintf(&b, "the driver waits: %s\n", strings.TrimSpace(l))
		for _, p := range lockPath.FindAllString(l, -1) {
			fmt.Fprintf(&b, "  %s: %s\n", p, lockState(p))
		}
	}
	fmt.Fprintf(&b, "processes in the repository: %s\n", strings.Join(procsIn(repo), "; "))
	lines := w.jn.lines[max(0, len(w.jn.lines)-5):]
	fmt.Fprintf(&b, "the journal's last lines:\n%s\n", strings.Join(lines, "\n"))
	return b.String()
}

// lockState describes a lock file for stallReport.
func lockState(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "gone (" + err.Error() + ")"
	}
	age := time.Since(fi.ModTime()).Round(time.Second)
	b, _ := os.ReadFile(path)
	switch {
	case len(b) == 0:
		return fmt.Sprintf("EMPTY, %s old (a process killed between creating and writing it?)", age)
	case bytes.HasPrefix(b, []byte("claudopilot ")):
		return fmt.Sprintf("the driver's own mark %q, %s old", strings.TrimSpace(string(b)), age)
	default:
		return fmt.Sprintf("%d bytes not the driver's, %s old", len(b), age)
	}
}

// procsIn lists the live processes whose working directory is in repo
// (pid and command line): who could hold a lock there.
func procsIn(repo string) []string {
	ents, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range ents {
		pid := e.Name()
		if pid[0] < '0' || pid[0] > '9' {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", pid, "cwd"))
		if err != nil || (cwd != repo && !strings.HasPrefix(cwd, repo+"/")) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		found = append(found, pid+" "+strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")))
	}
	if len(found) == 0 {
		return []string{"none"}
	}
	return found
}

// A driver that waits on something that never changes ends its round with
// its wait line and the state of what it waits on, as soon as the journal
// has been still for the stall bound, not at go test's deadline (CI's soak
// at stop 34: an empty index.lock, 1,657 s). A driver whose journal grows
// is left alone.
func TestStalledRoundEndsWithItsWaitLine(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	state := filepath.Join(repo, ".claudopilot", "state")
	for _, d := range []string{filepath.Join(repo, ".git"), state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, ".git", "index.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(state, "journal.jsonl")
	if err := os.WriteFile(journal, []byte(`{"ev":"gate","phase":"p6"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(script string, stall time.Duration) (roundEnd, time.Duration) {
		t.Helper()
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = repo
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		jn := &journalTail{path: journal}
		began := time.Now()
		end := watchRound(cmd, exited, jn, func() bool { return false }, syscall.SIGKILL, &out, time.Minute, stall)
		return end, time.Since(began)
	}
	// Stuck: prints its wait and sleeps past the test's bound.
	end, took := run(`echo "15:08:57 p6           wait: waiting: the base checkout's $PWD/.git/index.lock is held by another git"; exec sleep 120`, 300*time.Millisecond)
	if end.hung == "" || took > 30*time.Second {
		t.Fatalf("a stuck round was not ended as hung within the stall bound: %+v after %s", end, took)
	}
	for _, want := range []string{"the driver waits: 15:08:57 p6", "index.lock: EMPTY", "sleep 120", `{"ev":"gate","phase":"p6"}`} {
		if !strings.Contains(end.hung, want) {
			t.Errorf("the report lacks %q:\n%s", want, end.hung)
		}
	}
	t.Logf("the report:\n%s", end.hung)
	// Working: journals a line every 100 ms for a second, its journal
	// still for longer than the stuck one's stall bound in all (a loaded
	// machine's gaps stay far below 5 s).
	end, _ = run(`for i in 1 2 3 4 5 6 7 8 9 10; do echo '{"ev":"launch"}' >> .claudopilot/state/journal.jsonl; sleep 0.1; done`, 5*time.Second)
	if end.hung != "" || end.err != nil || end.stopped {
		t.Errorf("a round whose journal grows ended as %+v", end)
	}
}
