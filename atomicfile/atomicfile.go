// Package atomicfile is the driver's one way to replace a file (#23 §6): a
// temp file beside it, written and fsynced, renamed over it, and the folder
// fsynced. A reader sees the old bytes or the new ones, never a mix, and a
// crash leaves one or the other. A writer whose file needs no durability
// says NoSync and pays no fsync. Writers: the manifest (roadmap), control's
// switches and lanes, the instance name, the lane marker, the base-merge
// intent, the guard's notes (work), the login write-back (sandbox), the
// repository files put back (worktree's guard, sandbox's links), the web
// address file and the base-moved note. CreateWhole is its way to make a
// lock file that appears whole (the run lock, a checkout's index.lock).
package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Option changes how Write writes.
type Option func(*options)

type options struct {
	noSync    bool // atomic but not durable
	forceMode bool // perm even over an existing file's mode
}

// NoSync leaves out both fsyncs: readers still see the old bytes or the
// new ones, never a mix, but a crash may leave the old file. For a writer
// whose file is worth nothing after a crash (what a live driver listens
// on, a file put back in a folder the next run checks again) or that sits
// on a path with an fsync budget (issue 25: the landing path).
func NoSync() Option { return func(o *options) { o.noSync = true } }

// Mode gives the file perm even when an existing file has another mode
// (a file put back as it was kept, a secret that must stay 0600).
func Mode() Option { return func(o *options) { o.forceMode = true } }

// Write replaces path with data. An existing file keeps its mode (unless
// Mode); a new one gets perm. The temp file is made exclusively (a link
// planted at its name is never followed) and named "."+base+".tmp*" beside
// path, so a killed writer's leftovers can be found (TempGlob). The rename
// replaces whatever is at path, a link included, without following it.
func Write(path string, data []byte, perm fs.FileMode, opts ...Option) error {
	var o options
	for _, f := range opts {
		f(&o)
	}
	if !o.forceMode {
		if st, err := os.Stat(path); err == nil {
			perm = st.Mode().Perm()
		}
	}
	tmp, err := writeTemp(path, data, perm, !o.noSync)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	if !o.noSync {
		SyncDir(filepath.Dir(path))
	}
	return nil
}

// Temp writes data to a new temp file beside path, with path's mode (perm
// when path does not exist), fsynced unless NoSync, and returns its name:
// for a writer that moves it into place itself (an exchange, a rename
// after a check).
func Temp(path string, data []byte, perm fs.FileMode, opts ...Option) (name string, err error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	if st, err := os.Stat(path); err == nil {
		perm = st.Mode().Perm()
	}
	return writeTemp(path, data, perm, !o.noSync)
}

// writeTemp writes data to a new temp file beside path with mode perm,
// fsynced when sync, and returns its name.
func writeTemp(path string, data []byte, perm fs.FileMode, sync bool) (name string, err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return "", err
	}
	if err = tmp.Chmod(perm); err != nil {
		return "", err
	}
	if sync {
		if err = tmp.Sync(); err != nil {
			return "", err
		}
	}
	return tmp.Name(), tmp.Close()
}

// TempGlob is the pattern of the temp files Write and Temp leave beside
// path when killed.
func TempGlob(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
}

// SyncDir fsyncs a folder, so a rename in it survives a crash. Best
// effort: some file systems refuse to sync a folder.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
