package roadmap

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// guard watches one inode for writers while the driver swaps it out.
//
// With a read lease (F_SETLEASE F_RDLCK) the kernel refuses the lease while
// any process has the file open for writing, and a process that opens it
// for writing afterwards breaks the lease (its open waits until we let go),
// so F_GETLEASE tells us afterwards whether a writer came in. Leases work
// on ext4, tmpfs and overlayfs (measured on Linux 6.18, a lower-layer file
// of an overlay included); they are off where fs.leases-enable is 0 and on
// most network file systems. There the guard scans /proc for descriptors
// open for writing on the same inode instead: the same answers, except for
// a writer between its path lookup and its open's return.
type guard struct {
	f     *os.File
	dev   uint64
	ino   uint64
	lease bool // a read lease is held; else /proc is scanned
}

// guardFile opens path for reading and takes a read lease on it. It fails
// with a *busyError when a writer holds the file open.
func guardFile(path string, noLease bool) (*guard, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, err
	}
	g := &guard{f: f, dev: st.Dev, ino: st.Ino}
	if !noLease {
		_, err := unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_RDLCK)
		switch {
		case err == nil:
			g.lease = true
			return g, nil
		case errors.Is(err, unix.EAGAIN):
			f.Close()
			return nil, &busyError{who: writersOf(st.Dev, st.Ino)}
		}
		// EINVAL (leases off, or a file system without them), EACCES
		// (another user's file without CAP_LEASE): scan instead.
	}
	if who := writersOf(st.Dev, st.Ino); who != "" {
		f.Close()
		return nil, &busyError{who: who}
	}
	return g, nil
}

// intruded reports whether a process opened the file for writing since the
// guard was taken (lease), or holds it open for writing now (scan).
func (g *guard) intruded() bool {
	if g.lease {
		l, err := unix.FcntlInt(g.f.Fd(), unix.F_GETLEASE, 0)
		// During a lease break F_GETLEASE answers the type the breaker
		// needs, F_UNLCK for a writer.
		return err != nil || l != unix.F_RDLCK
	}
	return writersOf(g.dev, g.ino) != ""
}

// read returns the inode's whole content, wherever its name now is.
func (g *guard) read() ([]byte, error) {
	var buf bytes.Buffer
	_, err := io.Copy(&buf, io.NewSectionReader(g.f, 0, 1<<62))
	return buf.Bytes(), err
}

// release lets go of the lease: a writer waiting in open goes on.
func (g *guard) release() {
	if g != nil && g.f != nil {
		g.f.Close()
	}
}

// detach lets go of the lease and hands over the open file.
func (g *guard) detach() *os.File {
	if g.lease {
		unix.FcntlInt(g.f.Fd(), unix.F_SETLEASE, unix.F_UNLCK)
	}
	f := g.f
	g.f = nil
	return f
}

// writersOf names the processes ("pid 123 (vim)") that hold the inode open
// for writing, from /proc; "" when none, or when /proc cannot say.
func writersOf(dev, ino uint64) string {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return ""
	}
	var who []string
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fdDir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			var st unix.Stat_t
			if unix.Stat(filepath.Join(fdDir, fd.Name()), &st) != nil || st.Ino != ino || st.Dev != dev {
				continue
			}
			if !openForWrite(filepath.Join("/proc", p.Name(), "fdinfo", fd.Name())) {
				continue
			}
			comm, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "comm"))
			who = append(who, fmt.Sprintf("pid %d (%s)", pid, strings.TrimSpace(string(comm))))
			break
		}
	}
	return strings.Join(who, ", ")
}

// openForWrite reads the "flags:" line of a /proc/PID/fdinfo/FD file.
func openForWrite(fdinfo string) bool {
	b, err := os.ReadFile(fdinfo)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		v, ok := strings.CutPrefix(line, "flags:")
		if !ok {
			continue
		}
		flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
		return err == nil && flags&unix.O_ACCMODE != unix.O_RDONLY
	}
	return false
}
