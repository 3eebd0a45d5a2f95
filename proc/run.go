package proc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/claudopilot/claudopilot/secret"
)

// DefaultKillGrace is the SIGTERM→SIGKILL delay used when Spec.KillGrace is 0.
const DefaultKillGrace = 10 * time.Second

// drainGrace is how long output is still read once the process group is
// gone. Only a process that left the group (setsid) and survived can hold
// the pipe past that; we stop waiting for it rather than hang.
const drainGrace = 3 * time.Second

// Reasons a run ended other than running to completion.
const (
	ReasonStuck    = "stuck"
	ReasonTimeout  = "timeout"
	ReasonCanceled = "canceled"
	ReasonStart    = "start"
)

// Spec describes one agent process.
type Spec struct {
	Command string   // shell command line, run as: sh -c Command
	Dir     string   // working directory (the worktree)
	Env     []string // full environment; nil inherits ours (os/exec semantics)
	// Wrap, when set, is a command prefix the shell runs under (a
	// sandbox: bwrap and its options). The prefix's process leads the
	// group and is the pid reported.
	Wrap []string

	// Prompt is written to PromptFile before start and given on stdin. With
	// no PromptFile it still arrives on stdin; with neither, stdin is empty.
	Prompt     []byte
	PromptFile string

	// LogPath receives stdout+stderr. It is created with its directories; an
	// existing file is appended to after an "=== attempt restarted ===" line.
	LogPath string
	// LogCap bounds the log (DefaultLogCap when 0). Past it the file is
	// rewritten to a drop marker plus the newest LogCap/2 bytes.
	LogCap int64
	// Redact is the driver's redaction funnel: the output goes through
	// it, a line at a time, before the log and the tail see it.
	Redact *secret.Redactor

	StuckTimeout time.Duration // >0: no output for this long → Reason "stuck"
	Timeout      time.Duration // >0: wall-clock limit → Reason "timeout"
	KillGrace    time.Duration // SIGTERM→SIGKILL delay (DefaultKillGrace when 0)

	// OnStart gets the pid, which is also the process group id, right after
	// start so it can be journaled before anything else can go wrong.
	OnStart func(pid int)

	// Attach, when set, runs the command on a pseudo-terminal (stdin,
	// stdout and stderr; the prompt is then only in PromptFile) and
	// serves its screen on a unix socket at this path for `claudopilot
	// attach` (attach.go). The output is read, logged and redacted as
	// from a pipe.
	Attach string
}

// Result is how a run ended.
type Result struct {
	ExitCode int    // -1 when killed by a signal or not started
	Reason   string // "" (ran to completion, see ExitCode), "stuck", "timeout", "canceled", "start"
	// Err explains a non-empty Reason (for "canceled" it wraps the context's
	// cause) and reports supervision trouble such as a failed log write; it
	// is nil for a process that simply exited, whatever its code.
	Err error
	// Stray is set when some process of the run could not be stopped: it
	// may still be writing in Dir, so nothing may use Dir as finished.
	Stray          error
	Tail           []string // last TailLines lines of output
	Started, Ended time.Time
}

// Run starts s.Command in its own process group and waits until it ends, is
// stopped, or ctx is done. It always returns once the group is dead; leftover
// group members of a process that exited normally are stopped too (agents
// must not leave daemons behind).
func Run(ctx context.Context, s Spec) Result {
	res := runOnce(ctx, s)
	if sandboxSetupFailed(s, res) && ctx.Err() == nil {
		res = runOnce(ctx, s) // its output follows the first's in the log
	}
	return res
}

// sandboxSetupFailed reports a wrapped run that ended before its command
// started: the sandbox's bubblewrap exited 1 with nothing but its own
// "bwrap: ..." lines. On a loaded machine bwrap's set-up of the sandbox's
// loopback has failed now and then ("bwrap: loopback: Failed RTM_NEWADDR:
// No child processes"), and read as the command's verdict it turned a
// green gate red and sent the phase to its supervisor (issue 23's SOAK
// suite, sandbox_lockfile at load ~10). One more try, never more: a
// command that prints such a line itself gains only one rerun.
func sandboxSetupFailed(s Spec, res Result) bool {
	if len(s.Wrap) == 0 || res.Reason != "" || res.ExitCode != 1 || len(res.Tail) == 0 {
		return false
	}
	for _, l := range res.Tail {
		if !strings.HasPrefix(strings.TrimSpace(l), "bwrap: ") {
			return false
		}
	}
	return true
}

func runOnce(ctx context.Context, s Spec) (res Result) {
	res = Result{ExitCode: -1, Started: time.Now()}
	defer func() { res.Ended = time.Now() }()
	fail := func(reason string, err error) Result {
		res.Reason, res.Err = reason, err
		return res
	}
	if err := ctx.Err(); err != nil {
		return fail(ReasonCanceled, fmt.Errorf("supervisor: canceled before start: %w", context.Cause(ctx)))
	}
	if s.LogCap <= 0 {
		s.LogCap = DefaultLogCap
	}
	if s.KillGrace <= 0 {
		s.KillGrace = DefaultKillGrace
	}

	l, err := launch(s, &res.Started)
	if err != nil {
		return fail(ReasonStart, err)
	}
	defer l.close()
	cmd, pr, logw := l.cmd, l.pr, l.log
	pid := cmd.Process.Pid

	c := &copier{base: time.Now(), out: newOutput(s.Redact), sc: l.sc, log: logw}
	drained := c.start(pr)
	var waitErr error
	exited := make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	if s.OnStart != nil {
		s.OnStart(pid)
	}

	reason, cause := watch(ctx, s, exited, c.base, &c.lastOutput)
	groupErr := stopAll(pid, l.mark, l.since, reason == "", s.KillGrace, exited)

	// The group is dead, so the pipe hits EOF as soon as the buffered output
	// is read, unless an escaped process still holds it.
	if err := pr.SetReadDeadline(time.Now().Add(drainGrace)); err != nil {
		pr.Close()
	}
	<-drained
	pr.Close()

	res.Tail = c.tail.Lines()
	if waitErr != nil {
		var ee *exec.ExitError
		if !errors.As(waitErr, &ee) {
			cause = errors.Join(cause, fmt.Errorf("supervisor: wait: %w", waitErr))
		}
	}
	res.ExitCode = cmd.ProcessState.ExitCode()
	res.Reason = reason
	res.Stray = groupErr
	res.Err = errors.Join(cause, groupErr, logw.err, logw.Close())
	return res
}

// launched is a started shell and what Run closes once it is done.
type launched struct {
	cmd   *exec.Cmd
	stdin *os.File // the prompt, or nil
	pr    *os.File // the read end of the output
	log   *cappedLog
	sc    *screen // the terminal's clients (Attach), or nil
	mark  string
	// since is the started process's start (clock ticks since boot; 0:
	// unknown): everything of the run forked from it, so nothing that
	// started before can carry its mark (stopMarked reads no environ
	// of those).
	since uint64
}

// launch opens the prompt, the log and the output pipe and starts the
// shell, setting *started as it does; on an error it closes what it
// opened.
func launch(s Spec, started *time.Time) (*launched, error) {
	l := &launched{mark: newMark()}
	var err error
	if l.stdin, err = promptInput(s); err != nil {
		return nil, err
	}
	if l.log, err = openLog(s.LogPath, s.LogCap, *started); err != nil {
		l.close()
		return nil, err
	}
	// Our own pipe rather than handing the child the log file: we need to cap
	// the log, watch for silence and keep a tail. Because every stdio file is
	// an *os.File, os/exec starts no copying goroutines, so cmd.Wait returns
	// the moment the shell exits even if a grandchild still holds the pipe.
	var pw *os.File
	if l.pr, pw, err = outputFiles(s.Attach != ""); err != nil {
		l.log.Close()
		l.close()
		return nil, err
	}
	l.cmd = command(s, l.mark, l.stdin, pw)
	if s.Attach != "" {
		// A terminal: the child's stdin is it too, and it leads a
		// session (and group) of its own.
		l.cmd.Stdin, l.cmd.SysProcAttr = pw, terminalAttr()
		l.sc, err = serveScreen(s.Attach, l.pr)
	}
	if err == nil {
		*started = time.Now()
		if err = l.cmd.Start(); err != nil {
			err = fmt.Errorf("supervisor: start %q: %w", s.Command, err)
		} else if st, ok := readStat(l.cmd.Process.Pid); ok {
			l.since = st.start // not yet waited for: its /proc entry is there
		}
	}
	// Only the child may hold the write end, or we would never see EOF.
	pw.Close()
	if err != nil {
		l.pr.Close()
		l.log.Close()
		l.close()
		return nil, err
	}
	return l, nil
}

// close closes the prompt and stops serving the terminal.
func (l *launched) close() {
	l.sc.close()
	if l.stdin != nil {
		l.stdin.Close()
	}
}

// newMark returns a fresh environment entry that every process of one run
// carries, so those that escape the group (setsid) are found and stopped
// with it.
func newMark() string {
	var tag [8]byte
	rand.Read(tag[:])
	return Mark(hex.EncodeToString(tag[:]))
}

// command builds the shell that runs s.Command, in its own process group,
// writing to out.
func command(s Spec, mark string, stdin, out *os.File) *exec.Cmd {
	env := s.Env
	if env == nil {
		env = os.Environ()
	}
	argv := append(append([]string(nil), s.Wrap...), "/bin/sh", "-c", s.Command)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.Dir
	cmd.Env = append(slices.Clip(env), mark)
	cmd.Stdout, cmd.Stderr = out, out
	if stdin != nil {
		cmd.Stdin = stdin
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// copier copies a run's output to its screen, its log and its tail, and
// notes when output last came.
type copier struct {
	base       time.Time
	lastOutput atomic.Int64 // ns since base, monotonic
	out        output
	sc         *screen
	log        *cappedLog
	tail       tailLines
}

// start copies from pr until EOF or an error; the channel closes then.
func (c *copier) start(pr *os.File) <-chan struct{} {
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		buf := make([]byte, 64<<10)
		for {
			n, err := pr.Read(buf)
			if n > 0 {
				c.lastOutput.Store(int64(time.Since(c.base)))
				c.sc.write(buf[:n])
				p := c.out.write(buf[:n])
				c.log.Write(p)
				c.tail.Write(p)
			}
			if err != nil {
				p := c.out.flush()
				c.log.Write(p)
				c.tail.Write(p)
				if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrDeadlineExceeded) && !endOfTerminal(err) {
					c.log.Write([]byte(fmt.Sprintf("\n=== supervisor: reading output: %v ===\n", err)))
				}
				return
			}
		}
	}()
	return drained
}

// stopAll stops what is left of a run: its group (a shell that exited on
// its own leaves only an agent's daemons there, which must not keep writing
// in the worktree), then what escaped the group, found by its mark, on
// every path: nothing of the run may go on writing in its folder once Run
// returns (the gate runs there next).
func stopAll(pid int, mark string, since uint64, shellExited bool, grace time.Duration, exited <-chan struct{}) error {
	var err error
	if shellExited {
		err = KillGroup(pid, grace)
	} else {
		err = terminate(pid, grace, exited)
	}
	return errors.Join(err, stopMarked(mark, since, grace))
}

// outputFiles are the ends the driver reads and the child writes: a pipe,
// or with a terminal its master and slave.
func outputFiles(terminal bool) (r, w *os.File, err error) {
	if terminal {
		return openTerminal()
	}
	r, w, err = os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("supervisor: output pipe: %w", err)
	}
	return r, w, nil
}

// promptInput writes the prompt file and returns the file to use as stdin. A
// regular file rather than a pipe means no copying goroutine that could block
// on a child that never reads stdin.
func promptInput(s Spec) (*os.File, error) {
	if s.PromptFile != "" {
		if err := os.MkdirAll(filepath.Dir(s.PromptFile), 0o755); err != nil {
			return nil, fmt.Errorf("supervisor: create prompt dir: %w", err)
		}
		if err := os.WriteFile(s.PromptFile, s.Prompt, 0o644); err != nil {
			return nil, fmt.Errorf("supervisor: write prompt: %w", err)
		}
		f, err := os.Open(s.PromptFile)
		if err != nil {
			return nil, fmt.Errorf("supervisor: open prompt: %w", err)
		}
		return f, nil
	}
	if len(s.Prompt) == 0 {
		return nil, nil
	}
	f, err := anonFile("claudopilot-prompt")
	if err != nil {
		return nil, fmt.Errorf("supervisor: prompt temp file: %w", err)
	}
	if _, err := f.Write(s.Prompt); err != nil {
		f.Close()
		return nil, fmt.Errorf("supervisor: write prompt: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("supervisor: rewind prompt: %w", err)
	}
	return f, nil
}

// watch waits for the process to exit or for a reason to stop it.
func watch(ctx context.Context, s Spec, exited <-chan struct{}, base time.Time, lastOutput *atomic.Int64) (string, error) {
	var timeout, stuck <-chan time.Time
	if s.Timeout > 0 {
		// Measured from start, not from here: OnStart may have taken a while.
		t := time.NewTimer(s.Timeout - time.Since(base))
		defer t.Stop()
		timeout = t.C
	}
	var stuckTimer *time.Timer
	if s.StuckTimeout > 0 {
		stuckTimer = time.NewTimer(s.StuckTimeout)
		defer stuckTimer.Stop()
		stuck = stuckTimer.C
	}
	for {
		select {
		case <-exited:
			return "", nil
		case <-ctx.Done():
			if isClosed(exited) {
				return "", nil
			}
			return ReasonCanceled, fmt.Errorf("supervisor: canceled: %w", context.Cause(ctx))
		case <-timeout:
			if isClosed(exited) {
				return "", nil
			}
			return ReasonTimeout, fmt.Errorf("supervisor: timed out after %s", s.Timeout)
		case <-stuck:
			// Output resets the deadline lazily: re-arm for the remainder
			// instead of touching a timer on every read.
			silent := time.Since(base) - time.Duration(lastOutput.Load())
			if silent < s.StuckTimeout {
				stuckTimer.Reset(s.StuckTimeout - silent)
				continue
			}
			if isClosed(exited) {
				return "", nil
			}
			return ReasonStuck, fmt.Errorf("supervisor: no output for %s", silent.Round(time.Millisecond))
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// terminate stops a running process group: SIGTERM, SIGKILL after grace,
// and once the leader has exited SIGKILL for whatever is left, so no
// grandchild outlives a canceled phase. Descendants that left the group are
// found through parent links while the leader still lives and get the same
// treatment.
func terminate(pgid int, grace time.Duration, exited <-chan struct{}) error {
	escaped := descendants(pgid)
	var errs []error
	errs = append(errs, signalGroup(pgid, syscall.SIGTERM))
	signalProcs(escaped, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
		escaped = append(escaped, descendants(pgid)...)
		errs = append(errs, signalGroup(pgid, syscall.SIGKILL))
		signalProcs(escaped, syscall.SIGKILL)
		<-exited
	}
	signalProcs(escaped, syscall.SIGKILL)
	errs = append(errs, KillGroup(pgid, 0))
	deadline := time.Now().Add(reapWait)
	for anyAlive(escaped) && time.Now().Before(deadline) {
		time.Sleep(pollEvery)
	}
	return errors.Join(errs...)
}

// stopMarked stops every process carrying mark (MarkVar=value). A process
// forked after a scan (a daemon's next `git commit`, started just before
// the daemon got its signal) is not in that scan's list and would outlive
// the stop, holding the worktree's index.lock; so it scans again until none
// is left. since (0: none) is the run's first process's start: a process
// that started earlier is no descendant of the run, and its environ is not
// read (on a busy host most are such, and reading each environ after every
// agent, gate and prepare was most of the scan).
func stopMarked(mark string, since uint64, grace time.Duration) error {
	_, want, _ := strings.Cut(mark, "=")
	for pass := 0; ; pass++ {
		ps, err := marked(since, func(m string) bool { return m == want })
		if errors.Is(err, ErrNoProcs) {
			// Without /proc (macOS) marks cannot be read: the group is all.
			return nil
		} else if err != nil {
			return err
		}
		if len(ps) == 0 {
			return nil
		}
		if pass == maxStopPasses {
			return fmt.Errorf("supervisor: %d processes carrying %s still appear after %d rounds of stopping", len(ps), want, pass)
		}
		if err := stopProcs(ps, grace); err != nil {
			return err
		}
	}
}

// maxStopPasses bounds stopMarked's rounds: each round's processes are
// dead before the next scan, so only ones forking faster than they are
// stopped could use them all.
const maxStopPasses = 10
