package crash

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// stallAfter and lockStall bound how long a driver round may add nothing
// to the journal before the kill loops end it as hung: stallAfter in any
// case, lockStall when the driver's last wait line names a lock file that
// stays the same file (inode, size, times) for lockStall too. A driver
// waiting on something that will never change (an index.lock no live
// process holds: CI's soak, TestCrashResumeStacked/shift1 at stop 34,
// 1,657 s) journals its wait once and then nothing: the round waited for
// go test's own deadline (e2e.Bound) and ate CI's whole clock. A working
// driver journals every launch, end, gate and landing, but a merge that
// waits for a contested lock (TestKillLoop's IDE runs git status back to
// back) journals nothing between its tries for up to a minute and a half:
// the longest still journal measured at load 40-60 was 91 s (TestKillLoop;
// 43 s TestCrashResume), logged as "longest quiet" by each loop. A lock
// that git takes and frees again and again is a new file each time.
const (
	stallAfter = 10 * time.Minute
	lockStall  = time.Minute
)

// startRound starts a round's driver (cmd) with its output in an outBuf
// and its exit on a channel.
func startRound(t *testing.T, cmd *exec.Cmd) (*outBuf, <-chan error) {
	t.Helper()
	out := &outBuf{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return out, exited
}

// outBuf is a driver's output, read while the driver writes it.
type outBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *outBuf) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *outBuf) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// stallWatch tells a round that makes progress from one that hangs: a new
// journal line is progress; a lock file the driver waits for that stays
// the same file is none.
type stallWatch struct {
	jn               *journalTail
	out              func() string // the driver's output so far
	after, lockAfter time.Duration
	n                int       // journal lines at the last progress
	at               time.Time // when it was seen
	longest          time.Duration
	lock             string    // the lock the last wait line names
	lockID           string    // its identity when first seen
	lockAt, looked   time.Time // since when it is the same file; the last look
}

func newStallWatch(jn *journalTail, out func() string, after, lockAfter time.Duration) *stallWatch {
	return &stallWatch{jn: jn, out: out, after: after, lockAfter: lockAfter, n: jn.count(), at: time.Now()}
}

// stalled says whether the journal has not grown for w.after, or for
// w.lockAfter while the lock the driver waits for stayed the same file
// for w.lockAfter.
func (w *stallWatch) stalled() bool {
	now := time.Now()
	if n := w.jn.count(); n != w.n {
		w.longest = max(w.longest, now.Sub(w.at))
		w.n, w.at = n, now
		return false
	}
	quiet := now.Sub(w.at)
	if quiet >= w.after {
		return true
	}
	if quiet < w.lockAfter || now.Sub(w.looked) < w.lockAfter/20 {
		return false // the output is read only when the journal is still, a few times a stall
	}
	w.looked = now
	waits := waitLine.FindAllString(w.out(), -1)
	lock, id := "", ""
	if len(waits) > 0 {
		if ps := lockPath.FindAllString(waits[len(waits)-1], -1); len(ps) > 0 {
			lock, id = ps[len(ps)-1], fileIdentity(ps[len(ps)-1])
		}
	}
	if lock != w.lock || id != w.lockID || id == "" {
		w.lock, w.lockID, w.lockAt = lock, id, now
		return false
	}
	return now.Sub(w.lockAt) >= w.lockAfter
}

// fileIdentity is what changes when a file is made anew or written: ""
// when there is none.
func fileIdentity(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	id := fmt.Sprint(fi.Size(), fi.ModTime().UnixNano())
	// The device and inode tell a file made anew. Through os.Stat, not
	// Stat_t's times: their names differ on macOS, which CI vets too.
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id = fmt.Sprint(st.Dev, st.Ino, id)
	}
	return id
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
	if w.lock != "" && w.lockID != "" {
		fmt.Fprintf(&b, "the lock it waits for has stayed the same file for %s: %s\n", time.Since(w.lockAt).Round(100*time.Millisecond), w.lock)
	}
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
// its wait line and the state of what it waits on, as soon as the lock
// it names has stayed the same file for the lock bound (CI's soak at stop
// 34: an empty index.lock, 1,657 s), and a driver with a still journal
// and no such lock at the stall bound; never at go test's deadline. A
// driver whose journal grows, or that waits for a lock git takes and
// frees again and again (an IDE's git status), is left alone.
func TestStalledRoundEndsWithItsWaitLine(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	state := filepath.Join(repo, ".claudopilot", "state")
	for _, d := range []string{filepath.Join(repo, ".git"), state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	journal := filepath.Join(state, "journal.jsonl")
	if err := os.WriteFile(journal, []byte(`{"ev":"gate","phase":"p6"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(script string, after, lockAfter time.Duration) (roundEnd, time.Duration) {
		t.Helper()
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = repo
		out, exited := startRound(t, cmd)
		jn := &journalTail{path: journal}
		began := time.Now()
		end := watchRound(cmd, exited, jn, func() bool { return false }, syscall.SIGKILL, out, time.Minute, after, lockAfter)
		return end, time.Since(began)
	}
	lock := filepath.Join(repo, ".git", "index.lock")
	const wait = `echo "15:08:57 p6           wait: waiting: the base checkout's $PWD/.git/index.lock is held by another git"; exec sleep 120`
	// A lock git takes and frees again and again (made anew every 20 ms
	// for 3 s), and then a stale one (an empty index.lock nobody frees):
	// the round ends as hung, after the lock bound of the stale lock. The
	// bound is 1.5 s, 75 times the renewal's pace: at load 60 a goroutine
	// can wait hundreds of milliseconds for a core (500 ms was too close).
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		for i := 0; i < 150; i++ {
			os.WriteFile(lock, []byte(fmt.Sprint(i)), 0o644)
			time.Sleep(20 * time.Millisecond) // the other git's pace, not a wait
		}
		os.WriteFile(lock, nil, 0o644)
	}()
	end, took := run(wait, time.Minute, 1500*time.Millisecond)
	<-renewed
	if end.hung == "" || took > 30*time.Second {
		t.Fatalf("a round waiting on a stale lock was not ended as hung within the lock bound: %+v after %s", end, took)
	}
	if took < 3*time.Second {
		t.Errorf("a round waiting on a lock made anew every 20 ms was ended as hung after %s:\n%s", took, end.hung)
	}
	for _, want := range []string{"the driver waits: 15:08:57 p6", "index.lock: EMPTY", "has stayed the same file", "sleep 120", `{"ev":"gate","phase":"p6"}`} {
		if !strings.Contains(end.hung, want) {
			t.Errorf("the report lacks %q:\n%s", want, end.hung)
		}
	}
	t.Logf("the report:\n%s", end.hung)
	os.Remove(lock)
	// Still, no lock named: the stall bound.
	end, _ = run(`exec sleep 120`, 300*time.Millisecond, time.Minute)
	if !strings.Contains(end.hung, "the driver printed no wait line") {
		t.Errorf("a still round without a wait line: %+v", end)
	}
	// Working: journals a line every 100 ms for a second, its journal
	// still for longer than the bounds above in all (a loaded machine's
	// gaps stay far below 5 s).
	end, _ = run(`for i in 1 2 3 4 5 6 7 8 9 10; do echo '{"ev":"launch"}' >> .claudopilot/state/journal.jsonl; sleep 0.1; done`, 5*time.Second, 5*time.Second)
	if end.hung != "" || end.err != nil || end.stopped {
		t.Errorf("a round whose journal grows ended as %+v", end)
	}
}
