//go:build !linux

package sandbox

import (
	"errors"
	"time"
)

// notifier is inotify's, on Linux; elsewhere the stray-write watch runs
// git status at each attempt's start and end.
type notifier struct{}

func openNotifier(int, string) (*notifier, error) {
	return nil, errors.New("no inotify on this system")
}

func (n *notifier) close()                  {}
func (n *notifier) watch(string) error      { return errors.ErrUnsupported }
func (n *notifier) unwatch(string)          {}
func (n *notifier) sync() (uint64, error)   { return 0, errors.ErrUnsupported }
func (n *notifier) prune(uint64, time.Time) {}
func changedSince(string, time.Time) bool   { return true }
func (n *notifier) changes(string, uint64, time.Time, map[string]bool) ([]string, bool) {
	return nil, true
}
