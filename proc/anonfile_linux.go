package proc

import (
	"os"

	"golang.org/x/sys/unix"
)

// anonFile returns a new file that has no name anywhere (memfd_create):
// a driver killed with it open leaves nothing behind. A temp file in
// TMPDIR unlinked just after its creation left it there when the kill
// came in between.
func anonFile(name string) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return tempAnonFile(name) // a kernel without memfd (before 3.17), or a seccomp filter
	}
	return os.NewFile(uintptr(fd), name), nil
}
