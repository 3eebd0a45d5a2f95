//go:build linux

package roadmap

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchLate watches old, the inode a swap just replaced (content base),
// for a write that came too late for the lease to see: a writer whose open
// was between its path lookup and its lease break when the driver checked.
// Such a write is a human's save of the whole file, made from what they had
// before the driver's change: it is merged back into the live file, with
// every state the driver wrote since applied to it (mergeLate). The watch
// ends after lateWindow. It takes ownership of old.
func (f *File) watchLate(old *os.File, base []byte) {
	if f.lateSlots == nil {
		f.lateSlots = make(chan struct{}, maxLate)
	}
	slots := f.lateSlots
	select {
	case slots <- struct{}{}:
	default:
		old.Close()
		return
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		<-slots
		old.Close()
		return
	}
	// inotify follows the /proc link to the inode itself, unlinked or not.
	if err := w.Add(fmt.Sprintf("/proc/self/fd/%d", old.Fd())); err != nil {
		w.Close()
		<-slots
		old.Close()
		return
	}
	go func() {
		defer func() { <-slots }()
		defer old.Close()
		defer w.Close()
		expire := time.NewTimer(lateWindow)
		defer expire.Stop()
		var settle <-chan time.Time
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Has(fsnotify.Write) {
					// An editor writes in pieces (truncate, then
					// write): wait for it to settle.
					settle = time.After(150 * time.Millisecond)
				}
			case <-settle:
				settle = nil
				late, err := (&guard{f: old}).read()
				if err != nil || len(late) == 0 || bytes.Equal(late, base) {
					continue
				}
				err = f.Update(func(cur []byte) ([]byte, error) { return mergeLate(base, late, cur) })
				if errors.Is(err, errNewerEdit) {
					// Never over a newer edit: the older one is kept
					// beside the manifest.
					err = f.keepBeside(late)
				}
				if err == nil {
					base = late
				}
				if f.onLate != nil {
					f.onLate(err)
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
			case <-expire.C:
				return
			}
		}
	}()
}
