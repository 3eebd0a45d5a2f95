package gittest

import "syscall"

// memTempRoot is /dev/shm when it is a tmpfs with at least minFree bytes
// free, else "".
func memTempRoot(minFree uint64) string {
	const root, tmpfsMagic = "/dev/shm", 0x01021994
	var st syscall.Statfs_t
	if err := syscall.Statfs(root, &st); err != nil || st.Type != tmpfsMagic {
		return ""
	}
	if uint64(st.Bavail)*uint64(st.Bsize) < minFree {
		return ""
	}
	return root
}
