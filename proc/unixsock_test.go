package proc

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A repository deep in the file system puts its attach socket past the
// 107 bytes a socket address holds: net.Listen failed with "bind: invalid
// argument" (e2ecost, session 10: a /dev/shm test folder 3 bytes longer
// broke attach_tmux) and --attach could not be used there. The socket is
// listened on and dialled through its open folder instead.
func TestUnixSocketOnALongPath(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the long-path way goes through /proc/self/fd")
	}
	t.Parallel()
	dir := filepath.Join(t.TempDir(), strings.Repeat("deep-folder/", 10), ".claudopilot", "state", "attach")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "phase-01.sock")
	if len(path) <= 108 {
		t.Fatalf("the path is only %d bytes", len(path))
	}
	if ln, err := net.Listen("unix", path); err == nil {
		ln.Close()
		t.Fatalf("net.Listen took a %d-byte path: the test proves nothing here", len(path))
	}
	ln, err := ListenUnix(path)
	if err != nil {
		t.Fatalf("ListenUnix on a %d-byte path: %v", len(path), err)
	}
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Write([]byte("screen"))
			c.Close()
		}
	}()
	if fi, err := os.Stat(path); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("no socket at %s: %v", path, err)
	}
	c, err := DialUnix(path)
	if err != nil {
		t.Fatalf("DialUnix: %v", err)
	}
	b, err := io.ReadAll(c)
	c.Close()
	if err != nil || string(b) != "screen" {
		t.Fatalf("read %q, %v", b, err)
	}
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Errorf("Close unlinked the socket through its short name, whose folder descriptor is closed (it could name another folder by then): %v", err)
	}
}
