package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// CheckAdmin fails unless the admin folder gitDir of a linked worktree
// (<common>/worktrees/<name>) holds only plain folders and plain files
// with one link each. An agent can write that folder (it is its worktree's
// HEAD, index and reflog), and git, run there by the driver outside any
// sandbox, follows what it finds: it appends a reflog line through a
// logs/HEAD that is a symbolic link (or a hard link) to the user's
// ~/.bashrc or to the repository's config, and writes the index through an
// index that is one. So no driver git command may run in a worktree before
// this check, and none after it fails.
func CheckAdmin(gitDir string) error {
	fi, err := os.Lstat(gitDir)
	if err != nil {
		return fmt.Errorf("the admin folder %s: %w", gitDir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("the admin folder %s is not a plain folder (%s)", gitDir, kind(fi.Mode()))
	}
	return filepath.WalkDir(gitDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // git removed it meanwhile (a lock file)
			}
			return fmt.Errorf("the admin folder %s: %w", gitDir, err)
		}
		t := d.Type()
		switch {
		case t.IsDir():
			return nil
		case t.IsRegular():
			fi, err := d.Info()
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("the admin folder %s: %w", gitDir, err)
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
				return fmt.Errorf("%s in the worktree's admin folder is a hard link (%d links): git would write through it", p, st.Nlink)
			}
			return nil
		}
		return fmt.Errorf("%s in the worktree's admin folder is a %s: git would follow it", p, kind(t))
	})
}

// kind names a file type for a message.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return "folder"
	}
	return "special file"
}

// Populated lists the gitlink entries (submodules, or any repository an
// agent added) of the index of the worktree dir that hold a repository in
// the checkout (a .git there, folder or link file). git add, git status
// and git diff run in dir start `git status` in each of them, with that
// repository's own config: its filters, which no option of the driver's
// can turn off, would run outside the sandbox. So the driver scans no
// worktree where this list is not empty. It reads the index only.
func (c *Client) Populated(ctx context.Context, dir string) ([]string, error) {
	out, err := c.run(ctx, dir, nil, nil, "ls-files", "--stage", "-z")
	if err != nil {
		return nil, fmt.Errorf("list the gitlinks of %s: %w", c.abs(dir), err)
	}
	var found []string
	for _, e := range splitNUL(out) {
		meta, p, ok := strings.Cut(e, "\t")
		if !ok || !strings.HasPrefix(meta, "160000 ") {
			continue
		}
		if _, err := os.Lstat(filepath.Join(c.abs(dir), filepath.FromSlash(p), ".git")); err == nil {
			found = append(found, p)
		}
	}
	return found, nil
}

// inode is fi's inode number (0 where the system does not say).
func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
