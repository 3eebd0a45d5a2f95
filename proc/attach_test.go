package proc

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readUntil reads c until what it read holds want (a bound, not a wait:
// the deadline only stops a test that would hang).
func readUntil(t *testing.T, c net.Conn, want string) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(upper))
	var got []byte
	buf := make([]byte, 4096)
	for !strings.Contains(string(got), want) {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			t.Fatalf("read %q so far, want %q: %v", got, want, err)
		}
	}
	return string(got)
}

// waitSocket waits for the agent's socket to appear.
func waitSocket(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(upper)
	for {
		if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no socket at %s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A fake TTY agent: on a terminal (stdin and stdout, 40x120) it asks a
// name and greets it. A watcher that attached first gets the screen so far
// and then the output; a writer types the answer; what a watcher sends is
// never typed. The log, the tail (and so the needs-input marker) are as
// from a pipe; the socket is the user's only, and gone when the agent ends.
func TestRunOnATerminal(t *testing.T) {
	t.Parallel()
	s, d := spec(t, `if [ -t 0 ] && [ -t 1 ]; then echo "on a terminal $(stty size)"; fi
printf 'name? '
read name
echo "hello $name"
echo 'CLAUDOPILOT-NEEDS-INPUT: which db?'`)
	s.Attach = filepath.Join(d, "state", "attach", "p1.sock")
	done := make(chan Result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		done <- Run(ctx, s)
	}()
	waitSocket(t, s.Attach)
	if fi, _ := os.Stat(s.Attach); fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Dir(s.Attach)); fi.Mode().Perm() != 0o700 {
		t.Errorf("socket folder mode %v, want 0700", fi.Mode().Perm())
	}
	watcher, err := net.Dial("unix", s.Attach)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	watcher.Write([]byte{AttachRead})
	if got := readUntil(t, watcher, "name? "); !strings.Contains(got, "on a terminal 40 120") {
		t.Fatalf("the watcher saw %q, want the agent on a 40x120 terminal", got)
	}
	watcher.Write([]byte("intruder\n"))
	writer, err := net.Dial("unix", s.Attach)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	writer.Write([]byte{AttachWrite})
	readUntil(t, writer, "name? ") // the backlog
	writer.Write([]byte("world\n"))
	readUntil(t, watcher, "hello world")
	res := <-done
	if res.ExitCode != 0 || res.Reason != "" {
		t.Fatalf("result %+v", res)
	}
	log := readFile(t, s.LogPath)
	if !strings.Contains(log, "hello world") || strings.Contains(log, "intruder") {
		t.Errorf("log %q: want the writer's answer, not the watcher's", log)
	}
	if !strings.Contains(strings.Join(res.Tail, "\n"), "CLAUDOPILOT-NEEDS-INPUT: which db?") {
		t.Errorf("tail %q lacks the marker", res.Tail)
	}
	if _, err := os.Lstat(s.Attach); err == nil {
		t.Errorf("the socket is left after the agent ended")
	}
}
