package sandbox

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dirMask is what a folder's watch reports: every change to an entry
// (IN_CLOSE_WRITE also for a file written through mmap, reported when the
// writer lets go of it), never following a link (IN_DONT_FOLLOW,
// IN_ONLYDIR: a folder swapped for a link to / between the listing and
// the watch is not watched).
const dirMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

// notifier is one inotify instance watching, folder by folder, the
// checkouts the stray-write watch looks at, and the one goroutine that
// reads it. It counts the events it read (seq): an attempt notes the
// count as it starts (sync), and at its end asks what changed under a
// checkout after that count. Events come in the order the kernel queued
// them, so a file made in the notifier's own folder after the agent
// exited (sync again) is read after every write of the agent's.
type notifier struct {
	file      *os.File
	fd        int
	barrier   string // the notifier's own folder, for sync
	barrierFd int    // open on it: sync files are made in the folder watched, wherever it went
	barrierWd int
	limit     int        // most folder watches (tests); 0: the kernel's
	setup     sync.Mutex // one checkout's set-up at a time

	mu       sync.Mutex
	cond     *sync.Cond
	seq      uint64
	wds      map[int]watchDir
	roots    map[string]uint64 // checkout → seq its watch was complete at (absent: not watched whole)
	marks    map[string]mark   // path → its last change
	overflow uint64            // seq of the last queue overflow: events were lost
	seen     map[string]uint64 // sync file awaited → seq it was read at (0: not yet)
	err      error             // the reader stopped
}

type watchDir struct{ path, root string }

// mark is a path's last change: its event's count, and for a folder
// watched only after it was made, the time of that (its files may have
// been written before its watch: they count for every attempt that
// started before).
type mark struct {
	seq  uint64
	late time.Time
	root string // the checkout whose watch saw it (worktrees sit under the base checkout)
}

// openNotifier opens the inotify instance and its sync folder barrier,
// made afresh: what a killed driver's notifier left there is removed.
// The folder was os.MkdirTemp's in TMPDIR, one per run, and a driver
// killed (OOM, a reboot, kill -9) left it there for good.
func openNotifier(limit int, barrier string) (*notifier, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	n := &notifier{fd: fd, file: os.NewFile(uintptr(fd), "inotify"), limit: limit, barrier: barrier, barrierFd: -1,
		wds: map[int]watchDir{}, roots: map[string]uint64{}, marks: map[string]mark{}, seen: map[string]uint64{}}
	n.cond = sync.NewCond(&n.mu)
	if err := n.openBarrier(); err != nil {
		n.close()
		return nil, fmt.Errorf("inotify: sync folder %s: %w", barrier, err)
	}
	go n.read()
	return n, nil
}

// openBarrier makes the sync folder again and watches the folder it
// opened: through /proc/self/fd, the very inode the sync files are made
// in, even if an agent (without the sandbox it can write there) swapped
// the path meanwhile. Otherwise a sync file made in a folder not watched
// was waited for forever.
func (n *notifier) openBarrier() error {
	if err := os.RemoveAll(n.barrier); err != nil {
		os.Chmod(n.barrier, 0o700) // an agent's chmod 0
		if err := os.RemoveAll(n.barrier); err != nil {
			return err
		}
	}
	if err := os.Mkdir(n.barrier, 0o700); err != nil {
		return err
	}
	dfd, err := unix.Open(n.barrier, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	n.barrierFd = dfd
	if n.barrierWd, err = unix.InotifyAddWatch(n.fd, "/proc/self/fd/"+strconv.Itoa(dfd), unix.IN_CREATE|unix.IN_ONLYDIR); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	return nil
}

// close stops the reader and removes the sync folder.
func (n *notifier) close() {
	n.file.Close() // the reader's Read returns
	if n.barrierFd >= 0 {
		unix.Close(n.barrierFd)
	}
	os.RemoveAll(n.barrier)
}

// read hands every event to handle until the instance is closed.
func (n *notifier) read() {
	buf := make([]byte, 64<<10)
	for {
		k, err := n.file.Read(buf)
		if err != nil {
			n.mu.Lock()
			n.err = fmt.Errorf("inotify: %w", err)
			n.cond.Broadcast()
			n.mu.Unlock()
			return
		}
		n.mu.Lock()
		for off := 0; off+unix.SizeofInotifyEvent <= k; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			if i := indexNul(name); i >= 0 {
				name = name[:i]
			}
			n.handle(int(ev.Wd), ev.Mask, string(name))
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
		n.cond.Broadcast()
		n.mu.Unlock()
	}
}

func indexNul(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// handle books one event (n.mu held). A lost event (the queue overflowed)
// makes every checkout's changes unknown; a folder made, or moved in, is
// watched in turn; one moved away is no longer.
func (n *notifier) handle(wd int, mask uint32, name string) {
	n.seq++
	if mask&unix.IN_Q_OVERFLOW != 0 {
		n.overflow = n.seq
		return
	}
	if wd == n.barrierWd {
		// Only a sync's own file counts, the first time: one an agent
		// made there is no sync of the driver's, and it cannot make one
		// ahead under the name a sync will use (random).
		if seq, ok := n.seen[name]; ok && seq == 0 {
			n.seen[name] = n.seq
		}
		return
	}
	d, ok := n.wds[wd]
	if !ok {
		return // a watch taken off meanwhile
	}
	if mask&unix.IN_IGNORED != 0 {
		delete(n.wds, wd)
		if d.path == d.root {
			delete(n.roots, d.root)
		}
		return
	}
	p := d.path
	if name != "" {
		p = filepath.Join(d.path, name)
	}
	n.marks[p] = mark{seq: n.seq, root: d.root}
	if mask&unix.IN_ISDIR == 0 || name == "" || skipDir(d.root, p) {
		return
	}
	switch {
	case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
		if err := n.walk(d.root, p); err != nil {
			// Incomplete: what changed under the checkout is unknown
			// to every attempt now running; the next one sets it up
			// again, or falls back to git status.
			n.unwatchLocked(d.root)
			return
		}
		n.marks[p] = mark{seq: n.seq, late: time.Now(), root: d.root}
	case mask&unix.IN_MOVED_FROM != 0:
		n.unwatchUnder(p) // its watches would report its new place under the old name
	}
}

// skipDir: git's own folders, and the driver's (the worktrees of running
// attempts, logs), are not watched; git status does not list them either.
func skipDir(root, p string) bool {
	return filepath.Base(p) == ".git" || p == filepath.Join(root, ".claudopilot")
}

// walk watches dir and every folder under it (n.mu held), each before it
// is listed, so that a folder made meanwhile is either listed or reported.
// Links are never followed.
func (n *notifier) walk(root, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != root {
				return nil // gone meanwhile: its parent's watch saw it go
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != root && skipDir(root, p) {
			return filepath.SkipDir
		}
		if n.limit > 0 && len(n.wds) >= n.limit {
			return fmt.Errorf("inotify: watch %s: %w", p, syscall.ENOSPC)
		}
		wd, err := unix.InotifyAddWatch(n.fd, p, dirMask)
		switch {
		case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
			if p == root {
				return fmt.Errorf("inotify: watch %s: %w", p, err)
			}
			return filepath.SkipDir // gone or swapped for a link: the parent's watch saw it
		case err != nil:
			return fmt.Errorf("inotify: watch %s (fs.inotify.max_user_watches?): %w", p, err)
		}
		n.wds[wd] = watchDir{path: p, root: root}
		return nil
	})
}

// watch makes sure the checkout root is watched whole.
func (n *notifier) watch(root string) error {
	n.setup.Lock()
	defer n.setup.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.roots[root]; ok {
		return nil
	}
	if fi, err := os.Lstat(root); err != nil || !fi.IsDir() {
		return fmt.Errorf("inotify: watch %s: not a folder", root)
	}
	if err := n.walk(root, root); err != nil {
		n.unwatchLocked(root)
		return err
	}
	n.seq++
	n.roots[root] = n.seq
	return nil
}

// unwatch stops watching the checkout root (an attempt runs in it now).
func (n *notifier) unwatch(root string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.unwatchLocked(root)
}

func (n *notifier) unwatchLocked(root string) {
	delete(n.roots, root)
	n.unwatchUnder(root)
}

func (n *notifier) unwatchUnder(dir string) {
	for wd, d := range n.wds {
		if d.path == dir || within(d.path, dir) {
			unix.InotifyRmWatch(n.fd, uint32(wd))
			delete(n.wds, wd)
		}
	}
}

// sync returns the count of events read once every event queued before
// the call has been read. It fails, and never returns early, when that
// cannot be known: the sync file could not be made (an agent removed
// the folder, or took its write permission), or events were lost
// meanwhile (its own file's among them, perhaps).
func (n *notifier) sync() (uint64, error) {
	name := rand.Text()
	n.mu.Lock()
	n.seen[name] = 0
	from := n.seq
	n.mu.Unlock()
	fd, err := unix.Openat(n.barrierFd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err == nil {
		unix.Close(fd)
		defer unix.Unlinkat(n.barrierFd, name, 0)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for err == nil && n.seen[name] == 0 && n.overflow <= from && n.err == nil {
		n.cond.Wait()
	}
	seq := n.seen[name]
	delete(n.seen, name)
	switch {
	case err != nil:
		return 0, fmt.Errorf("inotify: sync file in %s: %w", n.barrier, err)
	case seq == 0 && n.err != nil:
		return 0, n.err
	case seq == 0:
		return 0, errors.New("inotify: events lost (the queue overflowed)")
	}
	return seq, nil
}

// changes lists the paths under the checkout root that changed after the
// count since (an attempt that started at start), leaving out the paths
// in skip and the driver's temp files beside them that are gone again.
// unknown: events were lost, or root's watch is not the one set up
// before since: then any file may have changed.
func (n *notifier) changes(root string, since uint64, start time.Time, skip map[string]bool) (paths []string, unknown bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if gen, ok := n.roots[root]; !ok || gen > since || n.overflow > since || n.err != nil {
		unknown = true
	}
	for p, m := range n.marks {
		if m.seq <= since && !m.late.After(start) || m.root != root || p == root || skip[p] || driverTemp(p, skip) {
			continue
		}
		paths = append(paths, p)
	}
	return paths, unknown
}

// prune forgets the changes no running attempt can ask about: those
// before the oldest start (seq, time).
func (n *notifier) prune(seq uint64, start time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for p, m := range n.marks {
		if m.seq <= seq && !m.late.After(start) {
			delete(n.marks, p)
		}
	}
}

// changedSince is true when p's inode changed after t, or p is gone and
// its folder changed after t (a deletion). The change time cannot be set
// back by the writer (utimes sets it to now).
func changedSince(p string, t time.Time) bool {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		if err := unix.Lstat(filepath.Dir(p), &st); err != nil {
			return true
		}
	}
	return !time.Unix(st.Ctim.Unix()).Before(t)
}
