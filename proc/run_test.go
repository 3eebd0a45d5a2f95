package proc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// upper is the bound for "ended long before the agent's own sleep": generous
// because the test machine may be slow and shared.
const upper = 30 * time.Second

// spec returns a Spec for command with a fresh temp dir as D (in the env, as
// the working directory, and holding the log).
func spec(t *testing.T, command string) (Spec, string) {
	t.Helper()
	d := t.TempDir()
	return Spec{
		Command:   command,
		Dir:       d,
		Env:       []string{"PATH=" + os.Getenv("PATH"), "D=" + d},
		LogPath:   filepath.Join(d, "logs", "agent.log"),
		KillGrace: 5 * time.Second,
	}, d
}

func run(t *testing.T, s Spec) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return Run(ctx, s)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fifo makes a named pipe the agent writes one line to when it is ready, so
// the test acts on the agent's state rather than on elapsed time.
func fifo(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "ready.fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// readLine opens the fifo read-write (which never blocks on Linux) and waits
// for one line, failing the test instead of hanging if the agent never
// writes.
func readLine(t *testing.T, path string) string {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Error(err)
		return ""
	}
	t.Cleanup(func() { f.Close() })
	got := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(f).ReadString('\n')
		got <- strings.TrimSpace(l)
	}()
	select {
	case l := <-got:
		return l
	case <-time.After(upper):
		t.Error("agent never signalled readiness")
		return ""
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatalf("not a pid: %q", s)
	}
	return n
}

func TestExitCode(t *testing.T) {
	for _, code := range []int{0, 1, 7, 255} {
		s, _ := spec(t, fmt.Sprintf("echo out; echo err >&2; exit %d", code))
		r := run(t, s)
		if r.ExitCode != code || r.Reason != "" || r.Err != nil {
			t.Errorf("exit %d: got %+v", code, r)
		}
		if r.Started.IsZero() || r.Ended.Before(r.Started) {
			t.Errorf("exit %d: times %v..%v", code, r.Started, r.Ended)
		}
		if strings.Join(r.Tail, "|") != "out|err" {
			t.Errorf("exit %d: tail %q", code, r.Tail)
		}
	}
}

func TestKilledBySignalIsMinusOne(t *testing.T) {
	s, _ := spec(t, "kill -KILL $$")
	r := run(t, s)
	if r.ExitCode != -1 || r.Reason != "" {
		t.Errorf("got %+v", r)
	}
}

func TestPromptEnvAndLog(t *testing.T) {
	s, d := spec(t, `cat > "$D/stdin.txt"; cat "$CLAUDOPILOT_PROMPT_FILE" > "$D/file.txt"; echo "FOO=$FOO HOME=${HOME-unset}"`)
	s.Prompt = []byte("do the thing\nline 2\n")
	s.PromptFile = filepath.Join(d, "prompts", "p.md")
	s.Env = append(s.Env, "FOO=bar baz", "CLAUDOPILOT_PROMPT_FILE="+s.PromptFile)
	r := run(t, s)
	if r.ExitCode != 0 || r.Err != nil {
		t.Fatalf("got %+v", r)
	}
	if got := readFile(t, filepath.Join(d, "stdin.txt")); got != string(s.Prompt) {
		t.Errorf("stdin = %q", got)
	}
	if got := readFile(t, filepath.Join(d, "file.txt")); got != string(s.Prompt) {
		t.Errorf("prompt file = %q", got)
	}
	// HOME is in our environment but not in Spec.Env, so it must be unset.
	if got := readFile(t, s.LogPath); got != "FOO=bar baz HOME=unset\n" {
		t.Errorf("log = %q", got)
	}
}

func TestPromptWithoutFile(t *testing.T) {
	s, d := spec(t, `cat > "$D/stdin.txt"`)
	s.Prompt = []byte("only on stdin")
	run(t, s)
	if got := readFile(t, filepath.Join(d, "stdin.txt")); got != "only on stdin" {
		t.Errorf("stdin = %q", got)
	}
}

func TestNoPromptGivesEmptyStdin(t *testing.T) {
	s, _ := spec(t, `cat; echo end`)
	r := run(t, s)
	if r.ExitCode != 0 || strings.Join(r.Tail, "|") != "end" {
		t.Errorf("got %+v", r)
	}
}

func TestExistingLogIsAppended(t *testing.T) {
	s, _ := spec(t, "echo second attempt")
	if err := os.MkdirAll(filepath.Dir(s.LogPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.LogPath, []byte("first attempt"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, s)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	lines := strings.Split(readFile(t, s.LogPath), "\n")
	if len(lines) != 4 || lines[0] != "first attempt" || !strings.HasPrefix(lines[1], "=== attempt restarted ") ||
		!strings.HasSuffix(lines[1], " ===") || lines[2] != "second attempt" || lines[3] != "" {
		t.Errorf("log lines = %q", lines)
	}
	// The header is ours, not the agent's output.
	if strings.Join(r.Tail, "|") != "second attempt" {
		t.Errorf("tail = %q", r.Tail)
	}
}

func TestLogCapKeepsTail(t *testing.T) {
	const limit = 1 << 20
	s, _ := spec(t, `yes "a line of output that repeats a lot" | head -c 10485760; echo; echo LAST-LINE`)
	s.LogCap = limit
	r := run(t, s)
	if r.ExitCode != 0 || r.Err != nil {
		t.Fatalf("got %+v", r)
	}
	b := []byte(readFile(t, s.LogPath))
	if len(b) > limit+100 {
		t.Errorf("log is %d bytes, cap %d", len(b), limit)
	}
	if !bytes.HasSuffix(b, []byte("\nLAST-LINE\n")) {
		t.Errorf("log does not end with the last line: %q", b[max(0, len(b)-80):])
	}
	if !bytes.HasPrefix(b, []byte("… ")) || !bytes.Contains(b[:100], []byte(" bytes dropped …\n")) {
		t.Errorf("log lacks the drop marker: %q", b[:min(len(b), 100)])
	}
	if r.Tail[len(r.Tail)-1] != "LAST-LINE" || len(r.Tail) != TailLines {
		t.Errorf("tail has %d lines ending %q", len(r.Tail), r.Tail[len(r.Tail)-1])
	}
}

// TestCappedLogIsExactSuffix checks the rotation arithmetic: the file is
// always a marker counting exactly the dropped bytes plus a suffix of the
// stream.
func TestCappedLogIsExactSuffix(t *testing.T) {
	for _, limit := range []int64{200, 1000, 4096} {
		path := filepath.Join(t.TempDir(), "log")
		l, err := openLog(path, limit, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var stream bytes.Buffer
		for i := range 2000 {
			p := []byte(fmt.Sprintf("line %d %s\n", i, strings.Repeat("x", i%37)))
			if i%97 == 0 {
				p = bytes.Repeat([]byte("y"), int(limit)) // larger than cap/2
			}
			stream.Write(p)
			l.Write(p)
			if l.size > limit {
				t.Fatalf("cap %d: size %d", limit, l.size)
			}
		}
		if err := errors.Join(l.err, l.Close()); err != nil {
			t.Fatal(err)
		}
		got := readFile(t, path)
		marker, kept, ok := strings.Cut(got, " bytes dropped …\n")
		if !ok || !strings.HasPrefix(marker, "… ") {
			t.Fatalf("cap %d: no marker in %q", limit, got)
		}
		n := atoi(t, strings.TrimPrefix(marker, "… "))
		if n+len(kept) != stream.Len() || !strings.HasSuffix(stream.String(), kept) {
			t.Errorf("cap %d: dropped %d + kept %d != written %d, or kept is not a suffix", limit, n, len(kept), stream.Len())
		}
		if int64(len(got)) > limit {
			t.Errorf("cap %d: file %d bytes", limit, len(got))
		}
	}
}

func TestCancelKillsProcessGroup(t *testing.T) {
	s, d := spec(t, "")
	ready := fifo(t, d)
	s.Command = `sleep 100 & echo $! > "$D/ready.fifo"; sleep 100`
	var pid int
	s.OnStart = func(p int) { pid = p }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	line := make(chan string, 1)
	go func() {
		l := readLine(t, ready)
		cancel()
		line <- l
	}()
	r := Run(ctx, s)
	grandchild := atoi(t, <-line)
	if r.Reason != ReasonCanceled || r.ExitCode != -1 || !errors.Is(r.Err, context.Canceled) {
		t.Errorf("got %+v", r)
	}
	if r.Ended.Sub(r.Started) > upper {
		t.Errorf("took %v", r.Ended.Sub(r.Started))
	}
	if Alive(pid) || Alive(grandchild) {
		t.Errorf("alive after Run: leader %d %v, grandchild %d %v", pid, Alive(pid), grandchild, Alive(grandchild))
	}
}

func TestCancelKillsEscapedDescendant(t *testing.T) {
	s, d := spec(t, "")
	ready := fifo(t, d)
	// setsid puts the sleep in its own session, out of reach of the group
	// signal; it is still a child of the running shell.
	// It reports readiness itself, so it has left the group by then.
	s.Command = `setsid sh -c 'echo $$ > "$D/ready.fifo"; exec sleep 100' & sleep 100`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	line := make(chan string, 1)
	go func() {
		l := readLine(t, ready)
		cancel()
		line <- l
	}()
	r := Run(ctx, s)
	escaped := atoi(t, <-line)
	if r.Reason != ReasonCanceled {
		t.Errorf("got %+v", r)
	}
	if Alive(escaped) {
		t.Errorf("escaped descendant %d still alive", escaped)
		_ = syscall.Kill(escaped, syscall.SIGKILL)
	}
}

func TestKillGraceEscalatesToSIGKILL(t *testing.T) {
	t.Parallel()
	s, d := spec(t, "")
	ready := fifo(t, d)
	// An ignored SIGTERM is inherited by the sleep, so only SIGKILL works.
	s.Command = `trap '' TERM; echo ready > "$D/ready.fifo"; sleep 100; echo survived`
	s.KillGrace = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		readLine(t, ready)
		cancel()
	}()
	r := Run(ctx, s)
	if r.Reason != ReasonCanceled || r.ExitCode != -1 {
		t.Errorf("got %+v", r)
	}
	if r.Ended.Sub(r.Started) > upper {
		t.Errorf("took %v", r.Ended.Sub(r.Started))
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	s, _ := spec(t, "echo working; sleep 60")
	s.Timeout = 300 * time.Millisecond
	r := run(t, s)
	if r.Reason != ReasonTimeout || r.ExitCode != -1 || r.Err == nil {
		t.Errorf("got %+v", r)
	}
	if r.Ended.Sub(r.Started) > upper {
		t.Errorf("took %v", r.Ended.Sub(r.Started))
	}
}

func TestStuck(t *testing.T) {
	t.Parallel()
	s, d := spec(t, "")
	said := fifo(t, d)
	// The silence is timed from the last output, and the stuck timer starts
	// once OnStart returns. The agent says "once", then tells the test on
	// the fifo, and OnStart waits for that: so the timer need not cover a
	// slow shell's start on a busy machine (it was 2 s timed from the start,
	// the test's whole wait), only the supervisor's read of "once" after
	// the agent wrote it.
	s.Command = `echo once; echo said > "$D/ready.fifo"; exec sleep 60`
	s.OnStart = func(int) { readLine(t, said) }
	s.StuckTimeout = 500 * time.Millisecond
	r := run(t, s)
	if r.Reason != ReasonStuck || r.ExitCode != -1 || r.Err == nil {
		t.Errorf("got %+v", r)
	}
	if r.Ended.Sub(r.Started) > upper {
		t.Errorf("took %v", r.Ended.Sub(r.Started))
	}
	if strings.Join(r.Tail, "|") != "once" {
		t.Errorf("tail = %q", r.Tail)
	}
}

func TestOnStartGetsGroupLeaderPid(t *testing.T) {
	// Field 5 of /proc/<pid>/stat is the process group (the shell name has
	// no spaces, so cut is safe here).
	s, _ := spec(t, `echo "$$ $(cut -d' ' -f5 /proc/$$/stat)"`)
	var pid int
	s.OnStart = func(p int) { pid = p }
	r := run(t, s)
	want := fmt.Sprintf("%d %d", pid, pid)
	if r.ExitCode != 0 || len(r.Tail) != 1 || r.Tail[0] != want {
		t.Errorf("OnStart pid %d; agent said %q, want %q", pid, r.Tail, want)
	}
}

func TestLeftoverGroupMemberDoesNotHangRun(t *testing.T) {
	s, d := spec(t, `sleep 100 & echo $! > "$D/gc.pid"; echo done`)
	r := run(t, s)
	if r.ExitCode != 0 || r.Reason != "" || r.Err != nil {
		t.Errorf("got %+v", r)
	}
	if r.Ended.Sub(r.Started) > upper {
		t.Errorf("took %v", r.Ended.Sub(r.Started))
	}
	if gc := atoi(t, readFile(t, filepath.Join(d, "gc.pid"))); Alive(gc) {
		t.Errorf("leftover group member %d still alive", gc)
	}
	if strings.Join(r.Tail, "|") != "done" {
		t.Errorf("tail = %q", r.Tail)
	}
}

func TestEscapedProcessHoldingStdoutDoesNotHangRun(t *testing.T) {
	// After the shell exits nothing links the setsid'd sleep to us, yet it
	// holds the output pipe; Run must give up on it.
	s, d := spec(t, "")
	fifo(t, d)
	// The shell waits until the sleep has left its group; otherwise the
	// group clean-up could kill it and the test would prove nothing.
	s.Command = `setsid sh -c 'echo ok > "$D/ready.fifo"; exec sleep 100' & echo $! > "$D/escaped.pid"; read x < "$D/ready.fifo"; echo done`
	r := run(t, s)
	escaped := atoi(t, readFile(t, filepath.Join(d, "escaped.pid")))
	defer func() {
		if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", escaped)); bytes.HasPrefix(cmd, []byte("sleep\x00100")) {
			_ = syscall.Kill(escaped, syscall.SIGKILL)
		}
	}()
	if r.ExitCode != 0 || r.Reason != "" || r.Err != nil {
		t.Errorf("got %+v", r)
	}
	if r.Ended.Sub(r.Started) > upper {
		t.Errorf("took %v", r.Ended.Sub(r.Started))
	}
	if strings.Join(r.Tail, "|") != "done" {
		t.Errorf("tail = %q", r.Tail)
	}
	// It left the group and lost its parent, yet it is stopped before Run
	// returns: an agent's daemon must not write on after the attempt.
	if Alive(escaped) {
		t.Errorf("the escaped process %d still runs after Run", escaped)
	}
}

// A daemon that left the group and whose parent is gone (a double fork)
// is stopped when the run is canceled too, not only when the agent exits.
func TestDoubleForkedDaemonStoppedOnCancel(t *testing.T) {
	s, d := spec(t, "")
	fifo(t, d)
	s.KillGrace = time.Second
	s.Command = `setsid sh -c 'sleep 100 & echo $! > "$D/ready.fifo"' & sleep 100`
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan Result, 1)
	go func() { done <- Run(ctx, s) }()
	escaped := atoi(t, readLine(t, filepath.Join(d, "ready.fifo")))
	defer syscall.Kill(escaped, syscall.SIGKILL)
	cancel()
	if r := <-done; r.Reason != ReasonCanceled {
		t.Errorf("reason = %q", r.Reason)
	}
	if Alive(escaped) {
		t.Errorf("the escaped daemon %d still runs after Run", escaped)
	}
}

func TestStartFailure(t *testing.T) {
	s, d := spec(t, "true")
	s.Dir = filepath.Join(d, "missing")
	r := run(t, s)
	if r.Reason != ReasonStart || r.ExitCode != -1 || r.Err == nil {
		t.Errorf("got %+v", r)
	}
}

func TestCanceledBeforeStart(t *testing.T) {
	s, d := spec(t, `touch "$D/ran"`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := Run(ctx, s)
	if r.Reason != ReasonCanceled || r.ExitCode != -1 || !errors.Is(r.Err, context.Canceled) {
		t.Errorf("got %+v", r)
	}
	if _, err := os.Stat(filepath.Join(d, "ran")); err == nil {
		t.Error("command ran")
	}
}

func TestTailKeepsLast120Lines(t *testing.T) {
	s, _ := spec(t, `i=0; while [ $i -lt 300 ]; do echo "line $i"; i=$((i+1)); done; printf 'no newline\r'`)
	r := run(t, s)
	if len(r.Tail) != TailLines || r.Tail[0] != "line 181" || r.Tail[TailLines-2] != "line 299" || r.Tail[TailLines-1] != "no newline" {
		t.Errorf("tail: %d lines, first %q, last %q", len(r.Tail), r.Tail[0], r.Tail[len(r.Tail)-1])
	}
}

func TestTailSplitsHugeLines(t *testing.T) {
	var tl tailLines
	tl.Write(bytes.Repeat([]byte("z"), 3*maxTailLine+5))
	tl.Write([]byte("\nend\n"))
	got := tl.Lines()
	if len(got) != 5 || len(got[0]) != maxTailLine || got[3] != "zzzzz" || got[4] != "end" {
		t.Errorf("got %d lines", len(got))
	}
}

func TestKillGroupAndAlive(t *testing.T) {
	if err := KillGroup(1, 0); err == nil {
		t.Error("KillGroup(1) must refuse")
	}
	if err := KillGroup(0, 0); err == nil {
		t.Error("KillGroup(0) must refuse")
	}
	if !Alive(os.Getpid()) {
		t.Error("we are not alive?")
	}
	if Alive(0) || Alive(-1) {
		t.Error("Alive must reject group addresses")
	}

	// A journaled group from a "previous driver": start it, then stop it by
	// pgid alone.
	s, d := spec(t, "")
	ready := fifo(t, d)
	s.Command = `sleep 100 & echo $! > "$D/ready.fifo"; sleep 100`
	s.KillGrace = time.Second
	pids := make(chan int, 1)
	s.OnStart = func(p int) { pids <- p }
	done := make(chan Result, 1)
	go func() { done <- run(t, s) }()
	pgid := <-pids
	grandchild := atoi(t, readLine(t, ready))
	if !Alive(pgid) || !Alive(grandchild) {
		t.Fatal("agent not running")
	}
	if err := KillGroup(pgid, time.Second); err != nil {
		t.Error(err)
	}
	if Alive(grandchild) {
		t.Error("grandchild survived KillGroup")
	}
	if r := <-done; r.ExitCode != -1 {
		t.Errorf("got %+v", r)
	}
	if err := KillGroup(pgid, time.Second); err != nil {
		t.Errorf("killing a gone group: %v", err)
	}
}

func TestParseStat(t *testing.T) {
	line := "1234 (we ird) (name) S 1 1234 1234 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 98765 1000 10 18446744073709551615"
	st, ok := parseStat([]byte(line))
	if !ok || st.pid != 1234 || st.ppid != 1 || st.pgrp != 1234 || st.state != 'S' || st.start != 98765 {
		t.Errorf("got %+v %v", st, ok)
	}
	if _, ok := parseStat([]byte("garbage")); ok {
		t.Error("garbage parsed")
	}
}

// A sandboxed run whose bubblewrap failed before the command started
// (exit 1, only "bwrap: " lines: its loopback set-up failed at load ~10
// in the SOAK suite, sandbox_lockfile's gate) is run once more, and the
// log keeps both; a command's own exit 1, an unwrapped run, and a second
// set-up failure are verdicts.
func TestSandboxSetupFailureRunsOnceMore(t *testing.T) {
	for _, tc := range []struct {
		name      string
		wrap      []string
		failUntil int // the try from which the command works
		out       string
		code, ran int
	}{
		{"set-up failed once", []string{"env"}, 2, "bwrap: loopback: Failed RTM_NEWADDR: No child processes", 0, 2},
		{"set-up failed twice", []string{"env"}, 9, "bwrap: loopback: Failed RTM_NEWADDR: No child processes", 1, 2},
		{"the command's own exit 1", []string{"env"}, 9, "FAIL: TestX", 1, 1},
		{"not sandboxed", nil, 2, "bwrap: loopback: Failed RTM_NEWADDR", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tries := filepath.Join(t.TempDir(), "tries")
			s, _ := spec(t, fmt.Sprintf(`echo x >> %s; [ "$(wc -l < %s)" -ge %d ] && exit 0; echo '%s' >&2; exit 1`, tries, tries, tc.failUntil, tc.out))
			s.Wrap = tc.wrap
			r := run(t, s)
			b, _ := os.ReadFile(tries)
			if n := strings.Count(string(b), "x"); n != tc.ran || r.ExitCode != tc.code {
				t.Errorf("ran %d times, exit %d; want %d, %d", n, r.ExitCode, tc.ran, tc.code)
			}
			if got, _ := os.ReadFile(s.LogPath); tc.ran == 2 && !strings.Contains(string(got), "RTM_NEWADDR") {
				t.Errorf("the log lost the first try's words: %q", got)
			}
		})
	}
}
