package worktree

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// maxPlain bounds what readPlain reads: git's admin files and a config
// are small; a bigger one is not read here (the caller asks git).
const maxPlain = 1 << 20

// openPlain opens p for reading only when it is a regular file: not
// through a symbolic link (O_NOFOLLOW) and without waiting on a named
// pipe (O_NONBLOCK). An agent may write its worktree and git's admin
// files, so a reader of them must neither follow what it put there nor
// hang the driver on it. A link or a file that is not regular is
// errNotPlain; a missing file keeps fs.ErrNotExist.
func openPlain(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a link: %w", p, errNotPlain)
	}
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file: %w", p, errNotPlain)
	}
	return f, nil
}

// readPlain reads the plain file p whole (see openPlain); one larger
// than maxPlain is errNotPlain.
func readPlain(p string) ([]byte, error) {
	f, err := openPlain(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPlain+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxPlain {
		return nil, fmt.Errorf("%s is over %d bytes: %w", p, maxPlain, errNotPlain)
	}
	return b, nil
}
