// Package tempdir makes temporary folders that outlive no process for
// long: a folder a killed process left (SIGKILL, the OOM killer, a
// reboot) is removed by the next one made beside it with its prefix.
// os.MkdirTemp's folders are removed only by their maker, and a driver
// killed mid-way left them for good: one per killed gate or reviewer in
// .claudopilot/sandbox, one per killed manifest rewrite in TMPDIR.
package tempdir

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// young is how old an unlocked folder must be to be reclaimed: its maker
// locks it just after making it, and must not lose it in between.
const young = time.Minute

// Dir makes a new folder in parent (TMPDIR when "") named prefix and a
// random suffix, held by an exclusive flock on the folder itself (the
// kernel lets go of it when its process dies, however it dies). First it
// removes the folders with that prefix there that no process holds and
// that are older than a minute. release removes the folder.
func Dir(parent, prefix string) (dir string, release func(), err error) {
	if parent == "" {
		parent = os.TempDir()
	}
	Reclaim(parent, prefix, young)
	if dir, err = os.MkdirTemp(parent, prefix); err != nil {
		return "", nil, err
	}
	fd, err := lock(dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return dir, func() {
		os.RemoveAll(dir) // before the lock goes: no one else removes it
		unix.Close(fd)
	}, nil
}

func lock(dir string) (int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// Reclaim removes the folders in parent whose name starts with prefix,
// that no process holds (Dir's lock) and that were last changed more
// than age ago; it returns how many. Folders it cannot open (another
// user's) and links are left alone.
func Reclaim(parent, prefix string, age time.Duration) int {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		p := filepath.Join(parent, e.Name())
		if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < age {
			continue
		}
		fd, err := lock(p)
		if err != nil {
			continue // held: its process lives (or not ours)
		}
		if os.RemoveAll(p) == nil {
			n++
		}
		unix.Close(fd)
	}
	return n
}
