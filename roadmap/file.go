package roadmap

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/claudopilot/claudopilot/atomicfile"
	"github.com/claudopilot/claudopilot/manifest"
)

// File is the live manifest on disk, shared by the driver and a human with
// an editor. Every change re-reads the file, changes one token and replaces
// the file atomically, so an edit made meanwhile is never overwritten.
type File struct {
	Path string
	// Backup, when set, is where a write keeps the bytes it replaced
	// when they were not this process's own last write (a person's save):
	// the replaced inode is renamed there, over the previous backup, not
	// unlinked. Its blocks were written when the person saved, long
	// before, so after a power cut that empties the live file (no fsync,
	// see update) the person's lines are still there (engine's
	// recoverManifest). The driver's state folder, never the roadmap's.
	Backup string
	mu     sync.Mutex // serializes this process's writers; humans are handled by re-reading
	// wrote is the bytes this process last put at the path (guarded by
	// mu): replaced bytes equal to them are the driver's own, unlinked.
	wrote []byte
	// last is the parse of the bytes this process last wrote (guarded by
	// mu). When the file still holds them, as it nearly always does, a
	// state change costs one copy instead of a parse: 0.4 ms instead of
	// 70 ms at 10,000 phases.
	last *manifest.Manifest

	// Test hooks: noLease forces the /proc scan instead of leases;
	// onBusy runs each time a writer holding the file open makes a write
	// wait; afterSwap runs right after the exchange, with the name the
	// old inode has then.
	noLease   bool
	onBusy    func()
	afterSwap func(oldName string)
	// beforeSwap (tests) runs between the check of the live file and the
	// exchange: where a human's rename-save can land.
	beforeSwap func()
	onLate     func(error) // after a late write was merged back (or failed to)

	// lateSlots bounds the late-write watches (watchLate); made under mu.
	lateSlots chan struct{}
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

// Source is the file's bytes as they are now.
func (f *File) Source() ([]byte, error) { return os.ReadFile(f.Path) }

// ModTime is the file's modification time: a restarted driver compares
// it with the journal's records to tell a write lost to a power cut from
// a person's later edit (scheduler's repairLive).
func (f *File) ModTime() (time.Time, error) {
	st, err := os.Stat(f.Path)
	if err != nil {
		return time.Time{}, err
	}
	return st.ModTime(), nil
}

// SetState changes one phase's state token.
func (f *File) SetState(id string, s manifest.State) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var next *manifest.Manifest
	err := f.update(func(src []byte) ([]byte, error) {
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
	return f.update(edit)
}

// update is UpdateLocked. No write of the file is fsynced, neither its
// new bytes nor the folder (issue 25 §1: no fsync for the manifest beyond
// git's own). A power cut may give back the file as it was before its
// last writes, or leave the name on an empty or cut file (ext4's
// auto_da_alloc covers a rename over a file, not an exchange). What the
// driver wrote is kept elsewhere: [merged] in the base's merge commit
// (the flip is committed with the merge), every state in the journal,
// fsynced once per landing; a person's last save in Backup (the inode
// the exchange replaced, renamed there). A restarted driver puts a lost
// write back (scheduler's repairLive) and rebuilds an emptied file from
// them (engine's recoverManifest); docs/landing.md, "A power cut".
func (f *File) update(edit func(src []byte) ([]byte, error)) error {
	var lastErr error
	var busySince time.Time
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
		err = f.replace(out, src)
		switch {
		case isBusy(err):
			// An editor is writing into the file: wait for it to
			// close, however long a save takes, up to busyWait.
			if busySince.IsZero() {
				busySince = time.Now()
			}
			if f.onBusy != nil {
				f.onBusy()
			}
			if time.Since(busySince) > busyWait {
				return fmt.Errorf("update %s: %w", f.Path, err)
			}
			lastErr = err
			try = 0
			continue
		case errors.Is(err, errChanged) && races < 100:
			lastErr = err
			races++
			try = 0 // a human is saving: not a failure, go again
			continue
		}
		return err
	}
	return fmt.Errorf("update %s: %w", f.Path, lastErr)
}

// busyWait bounds the wait for another process to close the manifest it
// holds open for writing. An editor's save takes milliseconds; a process
// that keeps the file open longer gets ErrBusy, and the caller writes
// later (the scheduler at the next change of the file).
const busyWait = 3 * time.Second

var errChanged = errors.New("changed while writing")

// errNoExchange: the platform or file system cannot swap two files
// atomically; the write falls back to a rename after the check.
var errNoExchange = errors.New("no atomic exchange here")

// WriteAtomic replaces path with data: a temp file in the same folder,
// fsync, the old file's mode, rename, fsync of the folder. A reader sees
// the old bytes or the new ones, never a mix.
func WriteAtomic(path string, data []byte) error {
	return atomicfile.Write(path, data, 0o644)
}

// writeTemp writes data to a new temp file beside path, with path's mode
// (atomicfile's, the one atomic write), not fsynced (see update).
func writeTemp(path string, data []byte) (string, error) {
	return atomicfile.Temp(path, data, 0o644, atomicfile.NoSync())
}

// target is the file the manifest's path names: a symlink is followed, so
// a write replaces the file it points to and the link stays.
func (f *File) target() string {
	if t, err := filepath.EvalSymlinks(f.Path); err == nil {
		return t
	}
	return f.Path
}

// replace replaces the manifest with data only if it still holds expect,
// the bytes data was computed from. Nothing a human saves may be lost:
//
//   - A human saving between our read and our rename: the new file is
//     swapped in with renameat2(RENAME_EXCHANGE) (renamex_np on macOS), so the replaced bytes
//     come back to us; if they are not what we read, the swap is undone
//     and errChanged returned, to re-read and apply again.
//   - An editor that writes into the open file (truncate, then write)
//     rather than renaming: its write would go into the old inode, which
//     the swap unlinks. A read lease on the old file (see guard) refuses
//     to be taken while such a writer has it open (*busyError: wait), and
//     tells us if one opened it during the swap: the swap is undone, the
//     writer's open goes on once we let go, and its bytes win.
//   - A writer that opens the path after the swap gets our new file, the
//     live one; a lease on it too tells us not to undo the swap then.
func (f *File) replace(data, expect []byte) error {
	path := f.target()
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	keepTmp := false
	defer func() {
		if !keepTmp {
			os.Remove(tmp)
		}
	}()
	old, err := guardFile(path, f.noLease)
	if err != nil {
		return err
	}
	defer old.release()
	if cur, err := old.read(); err != nil || !bytes.Equal(cur, expect) {
		return errChanged
	}
	neu, err := guardFile(tmp, f.noLease)
	if err != nil {
		return err
	}
	defer neu.release()
	if f.beforeSwap != nil {
		f.beforeSwap()
	}
	xerr := exchange(tmp, path)
	switch {
	case errors.Is(xerr, errNoExchange):
		// No exchange on this file system: the checks above are the
		// best there is (and the replaced inode is gone: no backup).
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
		f.wrote = data
		return nil
	case xerr != nil:
		return xerr
	}
	// tmp now names the old inode.
	if f.afterSwap != nil {
		f.afterSwap(tmp)
	}
	prev, rerr := old.read()
	// The name swapped out must be the inode that was checked: a human's
	// rename-save between the check and the swap puts a new inode at the
	// path, which the swap moves to tmp while old still reads as expected.
	// That save must go back, or it is deleted with tmp.
	swappedOld := sameInode(old.f, tmp)
	if swappedOld && !old.intruded() && rerr == nil && bytes.Equal(prev, expect) {
		// A writer between its path lookup and its open's lease break
		// as we checked would still write into the old inode: watch it
		// for a while and merge such a write back.
		f.watchLate(old.detach(), expect)
		keepTmp = f.keepBackup(tmp, expect)
		f.wrote = data
		return nil
	}
	if neu.intruded() {
		// Writers on both inodes: the one on the live file wins the
		// name; the other's bytes are kept beside it, never dropped.
		late := path + ".late-" + time.Now().UTC().Format("20060102T150405.000000000")
		if err := os.Rename(tmp, late); err != nil {
			return fmt.Errorf("keep a concurrent edit of %s: %w", path, err)
		}
		keepTmp = true
		return fmt.Errorf("%s: two processes wrote it at once; the other version is kept as %s", path, late)
	}
	// Someone saved in between: put their file back.
	if xerr := exchange(tmp, path); xerr != nil {
		keepTmp = true
		return fmt.Errorf("restore a concurrent edit of %s (kept as %s): %w", path, tmp, xerr)
	}
	return errChanged
}

// keepBackup renames the replaced inode, now at tmp, to f.Backup when its
// bytes are a person's (not empty, not this process's last write), and
// reports whether it did. A rename of a file whose blocks are on disk
// needs no fsync: no new one is added (issue 25 §1). Best effort: a
// failed rename (another file system) leaves tmp to be removed, as
// before the backup existed.
func (f *File) keepBackup(tmp string, replaced []byte) bool {
	if f.Backup == "" || len(bytes.TrimSpace(replaced)) == 0 || bytes.Equal(replaced, f.wrote) {
		return false
	}
	return os.Rename(tmp, f.Backup) == nil
}

// RemoveTemps deletes temp files a killed writer left beside the manifest.
func (f *File) RemoveTemps() {
	path := f.target()
	matches, _ := filepath.Glob(atomicfile.TempGlob(path))
	for _, m := range matches {
		os.Remove(m)
	}
}

// keepBeside saves b next to the manifest as <name>.late-<time>, for an
// edit that cannot be merged and must not be lost.
func (f *File) keepBeside(b []byte) error {
	late := f.Path + ".late-" + time.Now().UTC().Format("20060102T150405.000000000")
	if err := os.WriteFile(late, b, 0o644); err != nil {
		return fmt.Errorf("keep a late edit of %s: %w", f.Path, err)
	}
	return fmt.Errorf("%s: a late save came after a newer one; it is kept as %s", f.Path, late)
}

// sameInode reports whether the open file f is the file at path.
func sameInode(f *os.File, path string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Stat(path)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}
