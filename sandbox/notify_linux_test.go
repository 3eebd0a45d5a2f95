package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/claudopilot/claudopilot/internal/gittest"
)

// waiting adds k worktrees of phases waiting to land (on a branch, no
// attempt in them) and hides the driver's folder from git status, as
// the driver does. Each branch is a ref file at main's tip and each
// worktree one git (gittest.Worktree), where a worktree add -b was three
// processes.
func (r *repo) waiting(t *testing.T, k int) []string {
	t.Helper()
	os.WriteFile(filepath.Join(r.top, ".git", "info", "exclude"), []byte("/.claudopilot/\n"), 0o644)
	main, ok := gittest.Head(r.top)
	if !ok {
		t.Fatalf("no HEAD read in %s", r.top)
	}
	var wts []string
	for i := range k {
		branch := fmt.Sprintf("auto/w%d", i)
		if err := os.WriteFile(filepath.Join(r.top, ".git", "refs", "heads", filepath.FromSlash(branch)), []byte(main+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(r.top, ".claudopilot", "worktrees", fmt.Sprintf("w%d", i))
		gittest.Worktree(t, r.env, r.top, p, branch)
		wts = append(wts, p)
	}
	return wts
}

// statuses counts the git status calls in a GIT_TRACE file.
func statuses(t *testing.T, trace string) (n int) {
	t.Helper()
	b, err := os.ReadFile(trace)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "trace: built-in: git status") {
			n++
		}
	}
	return n
}

// The watch's cost does not grow with the worktrees waiting to land
// (issue 25 §1): it ran a git status of the base checkout and of every
// waiting worktree at each attempt's start and end (2 × (1 + k)); now an
// attempt's end runs one on the checkouts the watch saw change, however
// many wait. A stray write into one of them is still found.
func TestStrayWatchStatusesDoNotGrowWithWaitingWorktrees(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	for _, k := range []int{1, 8} {
		r := newRepo(t)
		wts := r.waiting(t, k)
		trace := filepath.Join(t.TempDir(), "trace")
		traced := r.git.WithEnv(append(slices.Clip(r.env), "GIT_TRACE="+trace))
		w := &Watch{}
		s := w.Begin(ctx, traced, r.top, r.p1)
		if n := statuses(t, trace); n != 0 {
			t.Errorf("k=%d: %d statuses at the start, want none", k, n)
		}
		os.WriteFile(filepath.Join(r.p1, "own"), []byte("p1's work\n"), 0o644)
		os.WriteFile(filepath.Join(wts[k-1], "stray"), []byte("p1's agent\n"), 0o644)
		got := w.End(ctx, traced, r.top, s)
		if want := []string{filepath.Join(wts[k-1], "stray")}; !slices.Equal(got, want) {
			t.Errorf("k=%d: found %q, want %q", k, got, want)
		}
		if n := statuses(t, trace); n != 1 {
			t.Errorf("k=%d: %d statuses, want 1 (of %s)", k, n, wts[k-1])
		}
		// Nothing written outside: no status at all.
		os.Remove(trace)
		s = w.Begin(ctx, traced, r.top, r.p1)
		os.WriteFile(filepath.Join(r.p1, "own"), []byte("more\n"), 0o644)
		if got := w.End(ctx, traced, r.top, s); len(got) != 0 {
			t.Errorf("k=%d: found %q in a quiet attempt", k, got)
		}
		if n := statuses(t, trace); n != 0 {
			t.Errorf("k=%d: %d statuses after a quiet attempt, want none", k, n)
		}
	}
}

// Three attempts run at once, each with a hostile agent that writes into
// the base checkout, into a worktree waiting to land and into another
// running attempt's worktree, makes folders, changes a tracked file and
// plants a link out of the tree. Every attempt's end names every stray
// file the three wrote where no attempt ran, and nothing else: not the
// running worktree's, not the ignored build file, not the human's notes
// left before the start, not what was written through the link (only the
// link itself is in the tree). No watch follows the link out of the
// tree. Each end runs git status on the two checkouts that changed, none
// at the start.
func TestStrayWatchHostileAgentsAtOnce(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	r := newRepo(t)
	idle := r.waiting(t, 1)[0]
	p3 := filepath.Join(r.top, ".claudopilot", "worktrees", "p3")
	r.gitOut(t, r.top, "worktree", "add", "-q", "-b", "auto/p3", p3)
	os.WriteFile(filepath.Join(r.top, ".gitignore"), []byte("/build/\n"), 0o644)
	os.Mkdir(filepath.Join(r.top, "build"), 0o755)
	r.gitOut(t, r.top, "add", ".gitignore")
	r.gitOut(t, r.top, "commit", "-qm", "ignore build")
	os.WriteFile(filepath.Join(r.top, "notes"), []byte("a human's notes\n"), 0o644)
	outside := t.TempDir()
	trace := filepath.Join(t.TempDir(), "trace")
	traced := r.git.WithEnv(append(slices.Clip(r.env), "GIT_TRACE="+trace))

	w := &Watch{}
	mine := []string{r.p1, r.p2, p3}
	var snaps []*Snapshot
	for _, wt := range mine {
		snaps = append(snaps, w.Begin(ctx, traced, r.top, wt))
	}
	if n := statuses(t, trace); n != 0 {
		t.Errorf("%d statuses at the starts, want none", n)
	}
	var agents []*exec.Cmd
	var outs []*bytes.Buffer
	for i, wt := range mine {
		cmd := exec.Command("testdata/stray-hostile.sh")
		cmd.Env = append(slices.Clip(r.env), "TOP="+r.top, "MINE="+wt, "BUSY="+mine[(i+1)%3], "IDLE="+idle, "OUTSIDE="+outside, fmt.Sprintf("N=%d", i))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		agents, outs = append(agents, cmd), append(outs, &out)
	}
	for i, a := range agents {
		if err := a.Wait(); err != nil {
			t.Fatalf("agent %d: %v\n%s", i, err, outs[i])
		}
	}
	if _, err := w.n.sync(); err != nil {
		t.Fatal(err)
	}
	w.n.mu.Lock()
	for _, d := range w.n.wds {
		if within(d.path, outside) || d.path == outside || !(d.path == r.top || within(d.path, r.top)) {
			t.Errorf("a watch on %s, outside the tree", d.path)
		}
	}
	w.n.mu.Unlock()

	want := []string{filepath.Join(r.top, "f")}
	for i := range 3 {
		want = append(want,
			filepath.Join(r.top, fmt.Sprintf("stray-%d", i)),
			filepath.Join(r.top, fmt.Sprintf("deep-%d/a/b/file", i)),
			filepath.Join(r.top, fmt.Sprintf("link-%d", i)),
			filepath.Join(idle, fmt.Sprintf("stray-%d", i)),
			filepath.Join(idle, fmt.Sprintf("new-%d/file", i)))
	}
	slices.Sort(want)
	for i, s := range snaps {
		if got := w.End(ctx, traced, r.top, s); !slices.Equal(got, want) {
			t.Errorf("attempt %d found\n%q\nwant\n%q", i, got, want)
		}
	}
	if n := statuses(t, trace); n != 2*3 {
		t.Errorf("%d statuses, want 6 (the base checkout and the waiting worktree, at each end)", n)
	}
	if w.n != nil {
		t.Error("the notifier outlives the last attempt")
	}
}

// When the watch cannot be set up (inotify's limits), the checkout gets
// a git status at the start and the end, as before the watch, stray
// writes are still found, and the log says so once.
func TestStrayWatchFallsBackToGitStatus(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	r := newRepo(t)
	r.waiting(t, 0)
	os.Mkdir(filepath.Join(r.top, "sub"), 0o755)
	trace := filepath.Join(t.TempDir(), "trace")
	traced := r.git.WithEnv(append(slices.Clip(r.env), "GIT_TRACE="+trace))
	var log bytes.Buffer
	w := &Watch{limit: 1} // the base checkout has two folders
	w.LogTo(&log)
	a := w.Begin(ctx, traced, r.top, r.p1)
	b := w.Begin(ctx, traced, r.top, r.p2)
	os.WriteFile(filepath.Join(r.top, "sub", "stray"), []byte("stray\n"), 0o644)
	want := []string{filepath.Join(r.top, "sub", "stray")}
	for _, s := range []*Snapshot{a, b} {
		if got := w.End(ctx, traced, r.top, s); !slices.Equal(got, want) {
			t.Errorf("found %q, want %q", got, want)
		}
	}
	if n := statuses(t, trace); n != 4 {
		t.Errorf("%d statuses, want 4 (the base checkout at both starts and ends)", n)
	}
	if got := log.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "the stray-write watch cannot watch the checkouts") {
		t.Errorf("the log says:\n%s", got)
	}
}

// Lost events (the inotify queue overflowed) mean "unknown", never
// "clean": the end runs git status on every checkout and reports each
// file that changed since the start, though the watch saw none of it.
func TestStrayWatchLostEventsMeanUnknown(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	r := newRepo(t)
	idle := r.waiting(t, 1)[0]
	w := &Watch{}
	s := w.Begin(ctx, r.git, r.top, r.p1)
	// The kernel dropped the events: no watch saw the writes.
	w.n.mu.Lock()
	for wd := range w.n.wds {
		unix.InotifyRmWatch(w.n.fd, uint32(wd))
	}
	w.n.handle(-1, unix.IN_Q_OVERFLOW, "")
	w.n.mu.Unlock()
	os.WriteFile(filepath.Join(r.top, "stray"), []byte("stray\n"), 0o644)
	os.WriteFile(filepath.Join(idle, "stray"), []byte("stray\n"), 0o644)
	got := w.End(ctx, r.git, r.top, s)
	// (p2's file, made a moment before the start, is reported too: the
	// change time's second of slack errs that way.)
	for _, p := range []string{filepath.Join(r.top, "stray"), filepath.Join(idle, "stray")} {
		if !slices.Contains(got, p) {
			t.Errorf("found %q, not %s", got, p)
		}
	}
}

// A driver killed (SIGKILL: the OOM killer, a reboot, kill -9) while its
// stray-write watch runs leaves nothing in TMPDIR, and its restart
// leaves nothing behind either. The watch's sync folder was
// os.MkdirTemp("", "claudopilot-watch-") per run, removed only by
// close: /tmp held 331 of them after the crash tests, and nothing ever
// reclaimed one. It now lives in the driver's folder under a fixed name:
// the next run's watch removes what a killed one left there (a sync
// file it was killed making included), and removes it at its end; it
// removes the TMPDIR folders earlier versions left too.
func TestKilledWatchLeavesNothing(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	r := newRepo(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), watchChildEnv+"="+r.top)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	cmd.Process.Kill()
	cmd.Wait()
	if line != "watching\n" {
		t.Fatalf("the child said %q\n%s", line, stderr.String())
	}
	left := func(when string) {
		t.Helper()
		ents, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			t.Errorf("%s, TMPDIR holds %s", when, e.Name())
		}
	}
	left("after the kill")
	// An earlier version's, left in TMPDIR by each killed driver.
	legacy := filepath.Join(tmp, "claudopilot-watch-80259942")
	os.Mkdir(legacy, 0o700)
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(legacy, old, old)

	// The restart reclaims what the killed watch left in the driver's
	// folder, a sync file it was killed making included.
	barrier := filepath.Join(r.top, ".claudopilot", "watch")
	if err := os.MkdirAll(barrier, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(barrier, "17"), nil, 0o600)
	w := &Watch{}
	s := w.Begin(ctx, r.git, r.top, r.p1)
	os.WriteFile(filepath.Join(r.top, "stray"), []byte("stray\n"), 0o644)
	if got, want := w.End(ctx, r.git, r.top, s), []string{filepath.Join(r.top, "stray")}; !slices.Equal(got, want) {
		t.Errorf("the restarted run found %q, want %q", got, want)
	}
	left("after the restart")
	if _, err := os.Lstat(barrier); !os.IsNotExist(err) {
		t.Errorf("the restart left %s (%v)", barrier, err)
	}
}

// Without the sandbox an agent can write into the watch's sync folder
// (.claudopilot/watch). Whatever it does there, an attempt's end never
// takes "no change" from it: a stray write is still found, and the end
// does not hang. It may swap the folder for another (the sync file was
// made by path, in a folder not watched: waited for forever), or remove
// it (the sync fails, and every file git lists that changed since the
// start counts).
func TestStrayWatchAgentInTheSyncFolder(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		agent func(barrier string) error
	}{
		{"swapped", func(b string) error {
			if err := os.Rename(b, b+"-moved"); err != nil {
				return err
			}
			return os.Mkdir(b, 0o700)
		}},
		{"swapped for a link", func(b string) error {
			if err := os.Rename(b, b+"-moved"); err != nil {
				return err
			}
			return os.Symlink(t.TempDir(), b)
		}},
		{"removed", func(b string) error {
			if err := os.Remove(b); err != nil {
				return err
			}
			return os.WriteFile(b, nil, 0o600)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRepo(t)
			r.waiting(t, 0)
			w := &Watch{}
			s := w.Begin(ctx, r.git, r.top, r.p1)
			if s.n == nil || s.seq == 0 {
				t.Fatal("no watch")
			}
			if err := tc.agent(barrierDir(r.top)); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(r.top, "stray"), []byte("stray\n"), 0o644)
			done := make(chan []string, 1)
			go func() { done <- w.End(ctx, r.git, r.top, s) }()
			select {
			case got := <-done:
				// Removed: more may be reported (every file git lists
				// that changed in the second before the start), never less.
				if want := filepath.Join(r.top, "stray"); !slices.Contains(got, want) {
					t.Errorf("found %q, not %s", got, want)
				}
			case <-time.After(time.Minute): // a bound on a failure, not a wait
				t.Fatal("the attempt's end hangs")
			}
		})
	}
}

// A sync returns only once its own file's event is read: files an agent
// made in the sync folder beforehand, under the names syncs used (a
// count: 1, 2, …), do not end it early, before the agent's writes made
// after them are read (the attempt's end then missed them). The names
// are random now, and only a sync's own counts.
func TestWatchSyncIgnoresAnAgentsFiles(t *testing.T) {
	r := newRepo(t)
	n, err := openNotifier(0, barrierDir(r.top))
	if err != nil {
		t.Fatal(err)
	}
	defer n.close()
	if err := n.watch(r.top); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		p := filepath.Join(n.barrier, strconv.Itoa(i+1))
		os.WriteFile(p, nil, 0o600)
		os.Remove(p)
	}
	// The agent's files are read (before a write made after them) …
	read := func(p string) uint64 {
		n.mu.Lock()
		defer n.mu.Unlock()
		for n.marks[p].seq == 0 && n.err == nil {
			n.cond.Wait()
		}
		return n.marks[p].seq
	}
	os.WriteFile(filepath.Join(r.top, "a"), nil, 0o644)
	read(filepath.Join(r.top, "a"))
	// … then the agent writes, and the driver syncs.
	b := filepath.Join(r.top, "b")
	os.WriteFile(b, nil, 0o644)
	seq, err := n.sync()
	if err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	got := n.marks[b].seq
	n.mu.Unlock()
	if got == 0 || got > seq {
		t.Errorf("the sync returned at event %d, before the write it followed was read (%d)", seq, got)
	}
}
