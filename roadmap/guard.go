package roadmap

import "errors"

// busyError means another process holds the manifest open for writing: an
// editor saving in place (open, truncate, write, close) is half-way
// through. Swapping the file now would leave its write in the old inode,
// unlinked and lost, so the writer waits until it closes the file.
type busyError struct{ who string }

func (e *busyError) Error() string {
	if e.who == "" {
		return "held open for writing by another process"
	}
	return "held open for writing by " + e.who
}

func (e *busyError) Is(target error) bool { return target == ErrBusy }

func isBusy(err error) bool { return errors.Is(err, ErrBusy) }

// ErrBusy is returned by a write that waited busyWait for another process
// to close the manifest it holds open for writing. Nothing was written;
// the caller tries again later.
var ErrBusy = errors.New("the manifest is held open for writing")
