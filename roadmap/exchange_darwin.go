package roadmap

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchange swaps two paths atomically: renamex_np(RENAME_SWAP), macOS's
// counterpart of Linux's renameat2(RENAME_EXCHANGE).
func exchange(a, b string) error {
	err := unix.RenamexNp(a, b, unix.RENAME_SWAP)
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return errNoExchange // a file system without it
	}
	return err
}
