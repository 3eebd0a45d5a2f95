package worktree

import (
	"bytes"
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
// worktree where this list is not empty. It reads the index only: the
// file itself where it is in a form gitlinksInIndex reads, else through
// `git ls-files --stage`.
func (c *Client) Populated(ctx context.Context, dir string) ([]string, error) {
	links, err := c.gitlinks(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("list the gitlinks of %s: %w", c.abs(dir), err)
	}
	var found []string
	for _, p := range links {
		if _, err := os.Lstat(filepath.Join(c.abs(dir), filepath.FromSlash(p), ".git")); err == nil {
			found = append(found, p)
		}
	}
	return found, nil
}

// gitlinks lists the paths of the gitlink entries of dir's index.
func (c *Client) gitlinks(ctx context.Context, dir string) ([]string, error) {
	if gd, err := c.GitDir(ctx, dir); err == nil {
		links, err := gitlinksInIndex(indexPath(gd))
		if err == nil || os.IsNotExist(err) {
			return links, nil // no index yet: no entries, as git reads it
		}
	}
	out, err := c.run(ctx, dir, nil, nil, "ls-files", "--stage", "-z")
	if err != nil {
		return nil, err
	}
	var links []string
	for _, e := range splitNUL(out) {
		if meta, p, ok := strings.Cut(e, "\t"); ok && strings.HasPrefix(meta, "160000 ") {
			links = append(links, p)
		}
	}
	return links, nil
}

// inode is fi's inode number (0 where the system does not say).
func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// mendCommondirs gives every linked worktree's empty commondir the
// content git writes there ("../..", the repository's common dir). A
// `git worktree add` killed between creating that file and writing it
// leaves it empty, and then every command that reads the worktrees
// (worktree list, add, unlock, branch -f) dies with "failed to read
// .../commondir", for every phase, until a human repairs it. Mended, the
// entry shows as what it is, a locked "initializing" add, which the
// runner sets aside and makes again. It reports whether it mended one.
// Only an empty plain file with one link is written, never followed: an
// agent can write its own admin folder.
func (c *Client) mendCommondirs(ctx context.Context) (bool, error) {
	common, err := c.CommonDir(ctx)
	if err != nil {
		return false, err
	}
	entries, err := os.ReadDir(filepath.Join(common, "worktrees"))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("mend worktree admin folders: %w", err)
	}
	mended := false
	for _, e := range entries {
		p := filepath.Join(common, "worktrees", e.Name(), "commondir")
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			continue
		}
		f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return mended, fmt.Errorf("mend %s: %w", p, err)
		}
		_, werr := f.WriteString("../..\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return mended, fmt.Errorf("mend %s: %w", p, werr)
		}
		mended = true
	}
	return mended, nil
}

// OwnGitDir returns the admin folder of the phase worktree wt, and fails
// unless git, run in wt, works on exactly that folder: <common>/worktrees/
// <name>, whose gitdir file points back at wt/.git, and which holds no
// link (CheckAdmin), a commondir naming this repository and a HEAD. A worktree whose .git
// file an agent deleted (or replaced) would otherwise let `git -C wt`
// resolve to the main repository, and commit the user's files there. No
// git command that changes anything may run in a phase worktree before
// this check. It reads files only: the merge gate's check of its own
// worktree (ownWorktree) asked git for the same in a rev-parse per landing
// (issue 25 §1).
func (c *Client) OwnGitDir(ctx context.Context, wt string) (string, error) {
	fi, err := os.Lstat(filepath.Join(wt, ".git"))
	if err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("the worktree %s has no .git link file of its own", wt)
	}
	// The link file read as git reads it (GitDir; git itself only
	// when the file is not a plain "gitdir:" line): a regular .git file
	// is where git's discovery stops, so its target is the folder git
	// works on, and the checks below hold for it. A git process here
	// cost four per attempt.
	gd, err := c.GitDir(ctx, wt)
	if err != nil {
		return "", fmt.Errorf("the worktree %s: %w", wt, err)
	}
	common, err := c.CommonDir(ctx)
	if err != nil {
		return "", err
	}
	if !samePath(filepath.Dir(gd), filepath.Join(common, "worktrees")) {
		return "", fmt.Errorf("git in the worktree %s works on %s, not on an admin folder of its own", wt, gd)
	}
	// The agent could write the admin folder: nothing in it may be a link
	// the driver's git (or the reads below) would follow, nor a pipe that
	// would block them (issue 21).
	if err := CheckAdmin(gd); err != nil {
		return "", fmt.Errorf("the worktree %s: %w", wt, err)
	}
	back, err := os.ReadFile(filepath.Join(gd, "gitdir"))
	if err != nil {
		return "", fmt.Errorf("the worktree %s: %w", wt, err)
	}
	link := strings.TrimSpace(string(back))
	if !filepath.IsAbs(link) {
		link = filepath.Join(gd, link)
	}
	if !samePath(link, filepath.Join(wt, ".git")) {
		return "", fmt.Errorf("git in the worktree %s works on %s, which belongs to %s", wt, gd, filepath.Dir(link))
	}
	// What git checks of an admin folder before it works on it (and what
	// a `git worktree add` cut off by a kill leaves missing or empty): a
	// commondir naming the repository, and a HEAD. Such a worktree is
	// not usable, and is set aside and made again.
	cd, err := os.ReadFile(filepath.Join(gd, "commondir"))
	if err != nil {
		return "", fmt.Errorf("the worktree %s: %w", wt, err)
	}
	cdp := strings.TrimSpace(string(cd))
	if cdp != "" && !filepath.IsAbs(cdp) {
		cdp = filepath.Join(gd, cdp)
	}
	if cdp == "" || !samePath(cdp, common) {
		return "", fmt.Errorf("the worktree %s: its admin folder %s names no repository, or another (commondir %q)", wt, gd, strings.TrimSpace(string(cd)))
	}
	if head, err := os.ReadFile(filepath.Join(gd, "HEAD")); err != nil || len(bytes.TrimSpace(head)) == 0 {
		return "", fmt.Errorf("the worktree %s: its admin folder %s has no HEAD", wt, gd)
	}
	return gd, nil
}
