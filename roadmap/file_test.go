package roadmap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/claudopilot/claudopilot/manifest"
)

// hang bounds a wait on something that should happen; it is never how a
// test synchronizes.
const hang = 2 * time.Minute

const (
	liveBefore = "1. [pending] **a** — a (deps: none)\n"
	liveHuman  = "1. [pending] **a** — a, as the human saved it (deps: none)\n"
	liveBoth   = "1. [merged] **a** — a, as the human saved it (deps: none)\n"
)

func newLive(t *testing.T, content string) *File {
	t.Helper()
	path := filepath.Join(t.TempDir(), ManifestName)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return NewFile(path)
}

// An editor that saves in place (open the file for writing, truncate,
// write, close) is half-way through its save when the driver flips a
// state. The driver must not swap the file under it: the save would go
// into the old inode, unlinked by the swap, and be lost. The write waits
// until the editor closes the file, then applies the flip to its bytes.
// Run both with the read lease and with the /proc scan that stands in for
// it where leases are off.
func TestSetStateWaitsForInPlaceSave(t *testing.T) {
	t.Parallel()
	for _, noLease := range []bool{false, true} {
		t.Run(map[bool]string{false: "lease", true: "proc"}[noLease], func(t *testing.T) {
			t.Parallel()
			f := newLive(t, liveBefore)
			f.noLease = noLease
			busy := make(chan struct{}, 1)
			f.onBusy = func() {
				select {
				case busy <- struct{}{}:
				default:
				}
			}
			editor, err := os.OpenFile(f.Path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- f.SetState("a", manifest.Merged) }()
			returned := false
			select {
			case <-busy:
			case err := <-done:
				returned = true
				t.Logf("SetState returned (%v) while an editor held the file open for writing", err)
			case <-time.After(hang):
				t.Fatal("SetState neither waited nor returned")
			}
			if err := editor.Truncate(0); err != nil {
				t.Fatal(err)
			}
			if _, err := editor.WriteAt([]byte(liveHuman), 0); err != nil {
				t.Fatal(err)
			}
			if err := editor.Close(); err != nil {
				t.Fatal(err)
			}
			if !returned {
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("SetState: %v", err)
					}
				case <-time.After(hang):
					t.Fatal("SetState still waits after the editor closed the file")
				}
			}
			if b, _ := os.ReadFile(f.Path); string(b) != liveBoth {
				t.Errorf("manifest = %q, want the human's save with the flip: %q", b, liveBoth)
			}
		})
	}
}

// A writer that opens the file during the swap (its path lookup found the
// old inode) breaks the lease: the swap is undone, so the old inode is the
// live file again and the writer's bytes, once its open goes on, land in
// it. The flip is then redone on the newer content.
func TestReplaceUndoesSwapForWriterOpeningOldInode(t *testing.T) {
	t.Parallel()
	f := newLive(t, liveBefore)
	var st syscall.Stat_t
	if err := syscall.Stat(f.Path, &st); err != nil {
		t.Fatal(err)
	}
	oldIno := st.Ino
	var broke error
	calls := 0
	f.afterSwap = func(oldName string) {
		calls++
		// O_NONBLOCK: the open fails at once with EWOULDBLOCK but the
		// lease break has begun, as for a blocking open.
		_, broke = unix.Open(oldName, unix.O_WRONLY|unix.O_NONBLOCK, 0)
	}
	err := f.replace([]byte(strings.Replace(liveBefore, "pending", "merged", 1)), []byte(liveBefore))
	if !errors.Is(broke, unix.EWOULDBLOCK) {
		t.Fatalf("a writer's open of the old inode during the swap = %v, want EWOULDBLOCK (a lease held)", broke)
	}
	if !errors.Is(err, errChanged) {
		t.Fatalf("replace = %v, want errChanged", err)
	}
	if err := syscall.Stat(f.Path, &st); err != nil || st.Ino != oldIno {
		t.Fatalf("the manifest is inode %d (%v), want the old inode %d back", st.Ino, err, oldIno)
	}
	// The writer's open goes on now, into the live file.
	if err := os.WriteFile(f.Path, []byte(liveHuman), 0o644); err != nil {
		t.Fatal(err)
	}
	f.afterSwap = nil
	if err := f.SetState("a", manifest.Merged); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(f.Path); string(b) != liveBoth {
		t.Errorf("manifest = %q, want %q", b, liveBoth)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(f.Path), ".*tmp*")); len(m) != 0 {
		t.Errorf("temp files left: %v", m)
	}
	if calls != 1 {
		t.Errorf("swapped %d times before the hook was cleared, want 1", calls)
	}
}

// A manifest that is a symlink stays one: writes go to the file it points
// to, with the same guards.
func TestSetStateWritesThroughSymlink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "elsewhere", "manifest.md")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, []byte(liveBefore), 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, ManifestName)
	if err := os.Symlink("elsewhere/manifest.md", link); err != nil {
		t.Fatal(err)
	}
	f := NewFile(link)
	if err := f.SetState("a", manifest.Merged); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the manifest is no longer a symlink: %v, %v", fi.Mode(), err)
	}
	want := strings.Replace(liveBefore, "pending", "merged", 1)
	if b, _ := os.ReadFile(real); string(b) != want {
		t.Errorf("target = %q, want %q", b, want)
	}
	if fi, _ := os.Stat(real); fi.Mode().Perm() != 0o640 {
		t.Errorf("target mode = %v", fi.Mode())
	}
	for _, d := range []string{dir, filepath.Dir(real)} {
		if m, _ := filepath.Glob(filepath.Join(d, ".*tmp*")); len(m) != 0 {
			t.Errorf("temp files left: %v", m)
		}
	}
}

// The watcher of a symlinked manifest sees changes to the file it points
// to, which lives in another folder.
func TestWatchFollowsSymlink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "elsewhere", "manifest.md")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, []byte(liveBefore), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "rm", ManifestName)
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := Watch(ctx, link, 10*time.Millisecond, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, []byte(liveHuman), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-ch:
		if string(b) != liveHuman {
			t.Errorf("watch reported %q", b)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no report of a change to the symlink's target")
	}
}

// A writer that got the old inode in the instant of the swap (its path
// lookup before it, its open after the lease check) writes into a file
// that is no longer the manifest. That late save is merged back: the live
// file becomes the human's bytes with the driver's flip applied.
func TestLateWriteIntoOldInodeMergedBack(t *testing.T) {
	t.Parallel()
	f := newLive(t, liveBefore)
	holder, err := os.Open(f.Path) // resolves the path now: the old inode
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	merged := make(chan error, 1)
	f.onLate = func(err error) { merged <- err }
	if err := f.SetState("a", manifest.Merged); err != nil {
		t.Fatal(err)
	}
	late, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", holder.Fd()), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := late.WriteString(liveHuman); err != nil {
		t.Fatal(err)
	}
	late.Close()
	select {
	case err := <-merged:
		if err != nil {
			t.Fatalf("merging the late write back: %v", err)
		}
	case <-time.After(hang):
		t.Fatal("the late write into the old inode was never noticed")
	}
	if b, _ := os.ReadFile(f.Path); string(b) != liveBoth {
		t.Errorf("manifest = %q, want the late save with the flip: %q", b, liveBoth)
	}
}

func TestMergeLate(t *testing.T) {
	t.Parallel()
	base := "**Status:** in-progress\n\n1. [pending] **a** — a\n2. [running] **b** — b\n3. [pending] **c** — c\n"
	cur := "**Status:** complete\n\n1. [merged] **a** — a\n2. [merged] **b** — b\n3. [pending] **c** — c\n"
	late := "**Status:** in-progress\n\n1. [pending] **a** — a, edited\n3. [blocked] **c** — c\n4. [pending] **d** — new\n"
	got, err := mergeLate([]byte(base), []byte(late), []byte(cur))
	if err != nil {
		t.Fatal(err)
	}
	want := "**Status:** complete\n\n1. [merged] **a** — a, edited\n3. [blocked] **c** — c\n4. [pending] **d** — new\n"
	if string(got) != want {
		t.Errorf("mergeLate =\n%s\nwant\n%s", got, want)
	}
}

// A late save is older than a human's newer save of the live file (by
// rename, after the swap): it must not be written over it.
func TestMergeLateNeverOverANewerEdit(t *testing.T) {
	t.Parallel()
	base := "1. [pending] **a** — a\n2. [pending] **b** — b\n\n## Notes\n"
	late := "1. [pending] **a** — a\n2. [pending] **b** — b\n\n## Notes\n- note 1\n"
	// The driver merged a, and a human then added a phase by rename.
	cur := "1. [merged] **a** — a\n2. [pending] **b** — b\n3. [pending] **late** — added\n\n## Notes\n- note 1\n"
	if _, err := mergeLate([]byte(base), []byte(late), []byte(cur)); !errors.Is(err, errNewerEdit) {
		t.Fatalf("mergeLate over a newer edit: err %v, want errNewerEdit", err)
	}
	// Only the driver's states changed since: merged back as before.
	cur = "1. [merged] **a** — a\n2. [pending] **b** — b\n\n## Notes\n"
	got, err := mergeLate([]byte(base), []byte(late), []byte(cur))
	if err != nil || string(got) != "1. [merged] **a** — a\n2. [pending] **b** — b\n\n## Notes\n- note 1\n" {
		t.Fatalf("mergeLate = %q, %v", got, err)
	}
}

// A human's rename-save between the driver's check of the live file and
// its swap is never lost: the swap moved the human's new inode aside, not
// the one checked, so it is put back and the flip redone on it (seen as
// "edit 0 lost" in TestLiveEdits with two suites at once).
func TestReplaceKeepsARenameSaveBeforeTheSwap(t *testing.T) {
	t.Parallel()
	f := newLive(t, liveBefore)
	saved := false
	f.beforeSwap = func() {
		if saved {
			return
		}
		saved = true
		tmp := f.Path + ".swp"
		if err := os.WriteFile(tmp, []byte(liveHuman), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, f.Path); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.SetState("a", manifest.Merged); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(f.Path); string(b) != liveBoth {
		t.Errorf("manifest = %q, want the human's save with the flip: %q", b, liveBoth)
	}
}

// Every state's write swaps its new bytes in and gives them back at once
// (no write fsyncs, issue 25 §1: the count is bench/overhead.sh FSYNC=1's;
// a restarted driver puts back a write a power cut lost, scheduler's
// TestRestorePutsBackALostWrite), and ModTime dates the file.
func TestSetStateEveryStateAndModTime(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "EXECUTION-MANIFEST.md")
	if err := os.WriteFile(path, []byte(liveBefore), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	f := NewFile(path)
	for _, s := range []manifest.State{manifest.Running, manifest.Failed, manifest.Running, manifest.Merged} {
		if err := f.SetState("a", s); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(path); !strings.Contains(string(b), "["+string(s)+"]") {
			t.Errorf("after SetState %s the file holds %q", s, b)
		}
	}
	if m, err := f.ModTime(); err != nil || !m.After(old) {
		t.Errorf("ModTime = %v, %v: want the last write's, after %v", m, err, old)
	}
	if _, err := NewFile(path + ".gone").ModTime(); err == nil {
		t.Error("ModTime of a missing file: no error")
	}
}

// A write that replaces a person's save keeps the replaced inode as the
// backup (renamed, its old mtime with it); a write that replaces the
// driver's own last write unlinks it, so the backup stays the person's
// last save. No temp file is left either way.
func TestReplaceKeepsThePersonsLastSave(t *testing.T) {
	t.Parallel()
	f := newLive(t, liveHuman)
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(f.Path, old, old); err != nil {
		t.Fatal(err)
	}
	var ino syscall.Stat_t
	if err := syscall.Stat(f.Path, &ino); err != nil {
		t.Fatal(err)
	}
	f.Backup = filepath.Join(t.TempDir(), "manifest-last-save.md")
	wantBackup := func(what, body string) {
		t.Helper()
		if b, err := os.ReadFile(f.Backup); err != nil || string(b) != body {
			t.Errorf("%s: the backup holds %q (%v), want %q", what, b, err, body)
		}
		if m, _ := filepath.Glob(filepath.Join(filepath.Dir(f.Path), ".*tmp*")); len(m) > 0 {
			t.Errorf("%s: temp files left: %v", what, m)
		}
	}
	if err := f.SetState("a", manifest.Running); err != nil {
		t.Fatal(err)
	}
	wantBackup("the first write", liveHuman)
	var st syscall.Stat_t
	if err := syscall.Stat(f.Backup, &st); err != nil || st.Ino != ino.Ino {
		t.Errorf("the backup is inode %d (%v), want the person's save's %d (renamed, not copied)", st.Ino, err, ino.Ino)
	}
	if fi, err := os.Stat(f.Backup); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("the backup's mtime = %v (%v), want the save's %v", fi.ModTime(), err, old)
	}
	if err := f.SetState("a", manifest.Merged); err != nil {
		t.Fatal(err)
	}
	wantBackup("a write over the driver's own", liveHuman)
	saved := strings.Replace(liveBoth, "merged", "failed", 1)
	if err := os.WriteFile(f.Path, []byte(saved), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.SetState("a", manifest.Pending); err != nil {
		t.Fatal(err)
	}
	wantBackup("a write over a newer save", saved)
}
