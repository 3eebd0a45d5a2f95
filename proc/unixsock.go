package proc

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
)

// maxSockPath is the longest path a Unix socket's address holds (Linux's
// sun_path is 108 bytes with its NUL; macOS's 104).
const maxSockPath = 103

// ListenUnix listens on the Unix socket path. A path too long for a
// socket address (a repository deep in the file system: the attach
// socket sits in .claudopilot/state/attach) is reached through the open
// folder, /proc/self/fd/N/NAME, on Linux: bind then failed with "invalid
// argument", and --attach could not be used there at all.
func ListenUnix(path string) (net.Listener, error) {
	var ln net.Listener
	err := viaFolder(path, func(addr string) (err error) {
		ln, err = net.Listen("unix", addr)
		return err
	})
	if err != nil {
		return nil, err
	}
	// The listener would remove its socket through the short name, gone
	// with the folder's descriptor: the owner removes path itself.
	if ul, ok := ln.(*net.UnixListener); ok && len(path) > maxSockPath {
		ul.SetUnlinkOnClose(false)
	}
	return ln, nil
}

// DialUnix connects to the Unix socket path, as ListenUnix made it.
func DialUnix(path string) (net.Conn, error) {
	var c net.Conn
	err := viaFolder(path, func(addr string) (err error) {
		c, err = net.Dial("unix", addr)
		return err
	})
	return c, err
}

// viaFolder calls use with path, or where path is too long for a socket
// address, with a short name for it through its open folder.
func viaFolder(path string, use func(addr string) error) error {
	if len(path) <= maxSockPath {
		return use(path)
	}
	short := func(fd uintptr) string { return fmt.Sprintf("/proc/self/fd/%d/%s", fd, filepath.Base(path)) }
	if runtime.GOOS != "linux" || len(short(1<<20)) > maxSockPath {
		return fmt.Errorf("the socket path %s is %d bytes, over the %d a Unix socket address holds: run from a shorter path", path, len(path), maxSockPath)
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return use(short(dir.Fd()))
}
