package roadmap

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
)

// File is the live manifest on disk, shared by the driver and a human with
// an editor. Every change re-reads the file, changes one token and replaces
// the file atomically, so an edit made meanwhile is never overwritten.
type File struct {
	Path string
	mu   sync.Mutex // serializes this process's writers; humans are handled by re-reading
	// last is the parse of the bytes this process last wrote (guarded by
	// mu). When the file still holds them, as it nearly always does, a
	// state change costs one copy instead of a parse: 0.4 ms instead of
	// 70 ms at 10,000 phases.
	last *manifest.Manifest
}

// NewFile returns the live manifest at path.
func NewFile(path string) *File { return &File{Path: path} }

// Read parses the file as it is now.
func (f *File) Read() (*manifest.Manifest, error) {
	src, err := os.ReadFile(f.Path)
	if err != nil {
		return nil, err
	}
	m, err := manifest.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	return m, nil
}

// SetState changes one phase's state token.
func (f *File) SetState(id string, s manifest.State) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var next *manifest.Manifest
	err := f.UpdateLocked(func(src []byte) ([]byte, error) {
		m := f.last
		if m == nil || !bytes.Equal(m.Src, src) {
			var err error
			if m, err = manifest.Parse(src); err != nil {
				return nil, err
			}
		}
		n, err := m.WithState(id, s)
		if err != nil {
			return nil, err
		}
		next = n
		return n.Src, nil
	})
	if err == nil {
		f.last = next
	}
	return err
}

// SetStatus changes the **Status:** value, adding the line if missing.
func (f *File) SetStatus(v string) error {
	return f.Update(func(src []byte) ([]byte, error) {
		m, err := manifest.Parse(src)
		if err != nil {
			return nil, err
		}
		if m.Status.Value == v {
			return src, nil
		}
		return m.SetStatus(v)
	})
}

// Update applies edit to the file's current bytes and replaces the file
// with the result. An editor may be half-way through saving (VS Code
// truncates, then writes), so a failed edit is tried again for a moment
// before it is reported.
func (f *File) Update(edit func(src []byte) ([]byte, error)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.UpdateLocked(edit)
}

// Lock and Unlock let a caller hold the file across a longer operation
// (the merger moving the checkout under it) and use UpdateLocked inside.
func (f *File) Lock()   { f.mu.Lock() }
func (f *File) Unlock() { f.mu.Unlock() }

// UpdateLocked is Update for a caller that holds the lock.
func (f *File) UpdateLocked(edit func(src []byte) ([]byte, error)) error {
	var lastErr error
	for try, races := 0, 0; try < 8; try++ {
		if try > 0 {
			time.Sleep(25 * time.Millisecond)
		}
		src, err := os.ReadFile(f.Path)
		if err != nil {
			lastErr = err
			continue
		}
		// A phase missing from a file that parses may be a truncated
		// save in progress (the first lines of the manifest parse fine):
		// it is tried again like any other failure.
		out, err := edit(src)
		if err != nil {
			lastErr = err
			continue
		}
		if bytes.Equal(out, src) {
			return nil
		}
		// If a human saved meanwhile, their bytes win and the token
		// change is applied to them on the next pass.
		err = writeAtomic(f.Path, out, src)
		if errors.Is(err, errChanged) && races < 100 {
			lastErr = err
			races++
			try = 0 // a human is saving: not a failure, go again
			continue
		}
		return err
	}
	return fmt.Errorf("update %s: %w", f.Path, lastErr)
}

var errChanged = errors.New("changed while writing")

// errNoExchange: the system or file system cannot swap two paths
// atomically; the write falls back to a rename after the check.
var errNoExchange = errors.New("no atomic exchange here")

// WriteAtomic replaces path with data: a temp file in the same folder,
// fsync, the old file's mode, rename, fsync of the folder. A reader sees
// the old bytes or the new ones, never a mix.
func WriteAtomic(path string, data []byte) error {
	return writeAtomic(path, data, nil)
}

// writeAtomic is WriteAtomic that replaces the file only if it still holds
// expect, the bytes the new ones were computed from (nil: unconditionally).
// A human saving between our read and our rename must not be overwritten,
// so the new file is swapped in with renameat2(RENAME_EXCHANGE): the
// replaced bytes come back to us, and if they are not what we read, the
// swap is undone and errChanged returned, to re-read and apply again.
func writeAtomic(path string, data, expect []byte) (err error) {
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err = tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err = tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if expect != nil {
		if cur, rerr := os.ReadFile(path); rerr != nil || !bytes.Equal(cur, expect) {
			return errChanged
		}
		switch xerr := exchange(tmp.Name(), path); {
		case xerr == nil:
			prev, rerr := os.ReadFile(tmp.Name())
			if rerr == nil && bytes.Equal(prev, expect) {
				os.Remove(tmp.Name())
				syncDir(dir)
				return nil
			}
			// Someone saved in between: put their file back.
			if xerr := exchange(tmp.Name(), path); xerr != nil {
				return fmt.Errorf("restore a concurrent edit of %s: %w", path, xerr)
			}
			return errChanged
		case errors.Is(xerr, errNoExchange):
			// No exchange on this file system: the check above is the
			// best there is.
		default:
			return xerr
		}
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	syncDir(dir)
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// RemoveTemps deletes temp files a killed writer left beside the manifest.
func (f *File) RemoveTemps() {
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(f.Path), "."+filepath.Base(f.Path)+".tmp*"))
	for _, m := range matches {
		os.Remove(m)
	}
}
