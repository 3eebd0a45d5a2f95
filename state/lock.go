package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/claudopilot/claudopilot/atomicfile"
)

// LockInfo is what the lock file records about its holder.
type LockInfo struct {
	PID  int       `json:"pid"`
	Host string    `json:"host"`
	Time time.Time `json:"time"`
}

// LockedError says another driver holds the repository.
type LockedError struct {
	Path string
	LockInfo
}

func (e *LockedError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("already running (another driver is taking the lock %s right now)", e.Path)
	}
	return fmt.Sprintf("already running (pid %d on %s since %s); lock %s", e.PID, e.Host, e.Time.Format(time.RFC3339), e.Path)
}

// LockFile is the driver lock's name in the git common dir.
const LockFile = "claudopilot.lock"

// LockPath is the driver lock of the repository whose git common dir is
// common: every worktree of it shares the one lock.
func LockPath(common string) string { return filepath.Join(common, LockFile) }

// Lock is a held driver lock: one driver per repository.
type Lock struct{ path string }

// AcquireLock takes the lock at path (under the git common dir, so every
// worktree of the repository shares it). A lock whose holder is dead, on
// this host, is taken over.
func AcquireLock(path string) (*Lock, error) {
	// Two drivers starting together over a stale lock must not both take
	// it over (one deleting the lock the other just made): the check and
	// takeover happen under an flock of the folder holding it, which
	// leaves no file behind.
	guard, err := os.Open(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	defer guard.Close()
	if err := syscall.Flock(int(guard.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	defer syscall.Flock(int(guard.Fd()), syscall.LOCK_UN)
	host, _ := os.Hostname()
	me := LockInfo{PID: os.Getpid(), Host: host, Time: time.Now().UTC()}
	data, _ := json.Marshal(me)
	for try := 0; try < 3; try++ {
		err := createWhole(path, data)
		if err == nil {
			return &Lock{path: path}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		held, ok := ReadLock(path)
		if ok && held.Host == host && !pidAlive(held.PID) || !ok && staleEmpty(path) {
			// Dead holder (or a torn write): take it over.
			os.Remove(path)
			continue
		}
		if !ok {
			held = LockInfo{}
		}
		return nil, &LockedError{Path: path, LockInfo: held}
	}
	return nil, fmt.Errorf("lock %s: could not take over a stale lock", path)
}

// createWhole creates the lock path holding data in one step
// (atomicfile.CreateWhole through path+".new", which AcquireLock's flock
// keeps to one driver): created and then written, a driver SIGKILLed in
// between left an empty lock, and a driver started within staleEmpty's
// 5 s refused to run ("another driver is taking the lock right now"), as
// a crash loop restarts at once.
func createWhole(path string, data []byte) error {
	err := atomicfile.CreateWhole(path, path+".new", data)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("write lock %s: %w", path, err)
	}
	return err
}

// staleEmpty is true for a lock file that holds nothing readable and is
// older than a few seconds: its writer died between create and write.
func staleEmpty(path string) bool {
	st, err := os.Stat(path)
	return err == nil && time.Since(st.ModTime()) > 5*time.Second
}

// ReadLock returns the lock's holder.
func ReadLock(path string) (LockInfo, bool) {
	var li LockInfo
	b, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(b, &li) != nil || li.PID <= 0 {
		return li, false
	}
	return li, true
}

// LockHeld reports the live holder of the lock at path, if any.
func LockHeld(path string) (LockInfo, bool) {
	li, ok := ReadLock(path)
	host, _ := os.Hostname()
	if !ok || (li.Host == host && !pidAlive(li.PID)) {
		return li, false
	}
	return li, true
}

// Release removes the lock.
func (l *Lock) Release() error { return os.Remove(l.path) }

func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// LockState is what a look at the driver lock finds.
type LockState int

const (
	LockFree  LockState = iota
	LockLive            // a live driver holds it (or one on another host, which cannot be checked)
	LockStale           // its driver is dead, or died before writing it
)

// LockStatus tells whether the driver lock at path is free, held by a live
// driver or stale, by the rules AcquireLock takes a lock over by (so what
// doctor and clean call stale a starting run takes over).
func LockStatus(path string) (LockInfo, LockState) {
	if _, err := os.Stat(path); err != nil {
		return LockInfo{}, LockFree
	}
	info, ok := ReadLock(path)
	if !ok {
		// A lock being written right now is not stale yet.
		if staleEmpty(path) {
			return info, LockStale
		}
		return info, LockLive
	}
	if _, live := LockHeld(path); live {
		return info, LockLive
	}
	return info, LockStale
}
