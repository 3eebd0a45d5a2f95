// Package atomicfile is the driver's one way to replace a file (#23 §6): a
// temp file beside it, written and fsynced, renamed over it, and the folder
// fsynced. A reader sees the old bytes or the new ones, never a mix, and a
// crash leaves one or the other.
package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path with data. An existing file keeps its mode; a new one
// gets perm. The temp file is named "."+base+".tmp*" beside path, so a
// killed writer's leftovers can be found (TempGlob).
func Write(path string, data []byte, perm fs.FileMode) error {
	tmp, err := Temp(path, data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	SyncDir(filepath.Dir(path))
	return nil
}

// Temp writes data to a new temp file beside path, with path's mode (perm
// when path does not exist), fsynced, and returns its name: for a writer
// that moves it into place itself (an exchange, a rename after a check).
func Temp(path string, data []byte, perm fs.FileMode) (name string, err error) {
	if st, err := os.Stat(path); err == nil {
		perm = st.Mode().Perm()
	}
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
	if err = tmp.Sync(); err != nil {
		return "", err
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
