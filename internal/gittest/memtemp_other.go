//go:build !linux

package gittest

// memTempRoot: only Linux's /dev/shm is known to be a tmpfs.
func memTempRoot(uint64) string { return "" }
