package proc

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/creack/pty"
)

// Attach: an agent that needs a terminal (claude's interactive UI, codex)
// runs on a pseudo-terminal (Spec.Attach, ATTACH=1), and its screen is
// served on a unix socket that only the user can open, for `claudopilot
// attach`. What the driver reads of the output (log, tail, redaction,
// the needs-input marker) is the same as on a pipe.
//
// The protocol: the client sends one byte, 'r' to watch or 'w' to watch
// and type; the server sends the recent screen (up to backlogSize bytes)
// and then the output as it comes. A 'w' client's bytes are typed into the
// agent's terminal. Closing the connection detaches; the agent goes on.

// Attach modes, the client's first byte.
const (
	AttachRead  = 'r'
	AttachWrite = 'w'
)

// backlogSize is how much recent output a new client is sent first.
const backlogSize = 64 << 10

// termSize is the agent's terminal: wide enough for the CLIs' UIs.
var termSize = pty.Winsize{Rows: 40, Cols: 120}

// openTerminal makes the pseudo-terminal an agent runs on: the driver
// reads the master, the child gets the slave as stdin, stdout and stderr
// and as its controlling terminal, in a session (and process group) of
// its own.
func openTerminal() (master, slave *os.File, err error) {
	master, slave, err = pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("supervisor: pseudo-terminal: %w", err)
	}
	if err := pty.Setsize(master, &termSize); err != nil {
		master.Close()
		slave.Close()
		return nil, nil, fmt.Errorf("supervisor: pseudo-terminal size: %w", err)
	}
	return master, slave, nil
}

// terminalAttr starts the child as the leader of a new session with the
// terminal as its controlling terminal: its process group id is its pid,
// as with Setpgid, so stopping the group works the same.
func terminalAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
}

// endOfTerminal is true for the error a master reads once every process
// holding the slave is gone (EIO on Linux).
func endOfTerminal(err error) bool {
	return errors.Is(err, syscall.EIO)
}

// screen fans an agent's terminal output out to attached clients and keeps
// the recent part for the next one.
type screen struct {
	mu      sync.Mutex // guards backlog and clients
	backlog []byte
	clients map[chan []byte]struct{}
	ln      net.Listener
	path    string
	input   io.Writer // the terminal's master: what a 'w' client types
}

// serveScreen listens on path (its folder made private) for clients of
// the terminal whose master is input.
func serveScreen(path string, input io.Writer) (*screen, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("attach: %w", err)
	}
	if err := os.Chmod(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("attach: %w", err)
	}
	os.Remove(path) // a socket a killed driver left
	// The folder is the user's only (0700), so the socket is never
	// reachable by others, even before its own mode is set.
	ln, err := ListenUnix(path)
	if err != nil {
		return nil, fmt.Errorf("attach: listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("attach: %w", err)
	}
	sc := &screen{clients: map[chan []byte]struct{}{}, ln: ln, path: path, input: input}
	go sc.accept()
	return sc, nil
}

func (sc *screen) accept() {
	for {
		c, err := sc.ln.Accept()
		if err != nil {
			return // closed: the agent ended
		}
		go sc.serve(c)
	}
}

// serve sends one client the backlog and then the output; a 'w' client's
// bytes go to the terminal.
func (sc *screen) serve(c net.Conn) {
	defer c.Close()
	var mode [1]byte
	if _, err := io.ReadFull(c, mode[:]); err != nil || mode[0] != AttachRead && mode[0] != AttachWrite {
		return
	}
	ch := make(chan []byte, 256)
	sc.mu.Lock()
	first := append([]byte(nil), sc.backlog...)
	sc.clients[ch] = struct{}{}
	sc.mu.Unlock()
	defer sc.drop(ch)
	go func() {
		// Typed input (write mode); in read mode anything sent is read
		// and dropped, so the connection's end is still seen.
		dst := io.Discard
		if mode[0] == AttachWrite {
			dst = sc.input
		}
		io.Copy(dst, c)
		c.Close()
	}()
	if _, err := c.Write(first); err != nil {
		return
	}
	for b := range ch {
		if _, err := c.Write(b); err != nil {
			return
		}
	}
}

func (sc *screen) drop(ch chan []byte) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if _, ok := sc.clients[ch]; ok {
		delete(sc.clients, ch)
		close(ch)
	}
}

// write passes output to every client; one too slow to keep up is
// dropped rather than holding the agent up.
func (sc *screen) write(p []byte) {
	if sc == nil || len(p) == 0 {
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.backlog = append(sc.backlog, p...)
	if n := len(sc.backlog); n > backlogSize {
		sc.backlog = append(sc.backlog[:0], sc.backlog[n-backlogSize:]...)
	}
	for ch := range sc.clients {
		select {
		case ch <- append([]byte(nil), p...):
		default:
			delete(sc.clients, ch)
			close(ch)
		}
	}
}

// close stops serving: the socket goes, every client is told (EOF).
func (sc *screen) close() {
	if sc == nil {
		return
	}
	sc.ln.Close()
	os.Remove(sc.path)
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for ch := range sc.clients {
		delete(sc.clients, ch)
		close(ch)
	}
}
