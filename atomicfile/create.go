package atomicfile

import (
	"errors"
	"io/fs"
	"os"
)

// CreateWhole creates path holding data in one step, failing with an
// error that wraps fs.ErrExist when path exists: the driver's lock files
// (its run lock, a checkout's index.lock). data goes to side first, which
// is then hard-linked as path, so a process killed at any instant leaves
// no path or a whole one. Created and then written, a SIGKILL in between
// left an empty lock that the restarted driver took for another
// process's. The caller makes sure nobody else writes side meanwhile (the
// driver lock, a flock). No fsync: after a power cut every lock is stale
// and taken over. A file system without hard links gets the
// create-then-write.
func CreateWhole(path, side string, data []byte) error {
	os.Remove(side) // a killed process's: it may still be linked to its lock
	if err := os.WriteFile(side, data, 0o644); err != nil {
		return err
	}
	defer os.Remove(side)
	err := os.Link(side, path)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(path)
	}
	return werr
}
