package worktree

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// registerFromFiles registers a new worktree at path (missing) on the
// existing branch as `git worktree add --no-checkout path branch` does
// (git 2.39's add_worktree): the admin folder worktrees/<name> with its
// locked ("initializing" while it is written), gitdir, commondir and HEAD
// files, and path/.git naming it. That command was two processes (git
// worktree add, and the symbolic-ref it runs for the HEAD) of an
// attempt's six (issue 23). The caller holds the worktree lock.
//
// errNotPlain, before anything is written, wherever git would decide
// otherwise or this cannot tell: a config with extensions, sparse
// checkout or includes; a branch not found by the resolver; the branch
// checked out (or a registration of path) in any worktree, prunable ones
// included; a rebase or bisect under way in any worktree; a folder name
// git would rename, or an admin folder of that name already there; a
// worktree list git's files do not give plainly. git worktree add then
// runs, and refuses, prunes or renames as it always did.
func (c *Client) registerFromFiles(ctx context.Context, path, branch string) error {
	common, err := c.CommonDir(ctx)
	if err != nil {
		return errNotPlain
	}
	cfg, err := readPlain(filepath.Join(common, "config"))
	low := bytes.ToLower(cfg)
	if err != nil || bytes.Contains(low, []byte("extensions")) || bytes.Contains(low, []byte("sparse")) || bytes.Contains(low, []byte("include")) {
		return errNotPlain
	}
	if _, err := c.lookup(ctx, "refs/heads/"+branch); err != nil {
		return errNotPlain
	}
	wts, err := c.worktreesFromFiles(ctx)
	if err != nil {
		return errNotPlain
	}
	gitDirs := []string{common}
	for _, wt := range wts {
		if wt.Branch == branch || samePath(wt.Path, path) {
			return errNotPlain
		}
	}
	admins, _ := os.ReadDir(filepath.Join(common, "worktrees"))
	for _, a := range admins {
		gitDirs = append(gitDirs, filepath.Join(common, "worktrees", a.Name()))
	}
	for _, d := range gitDirs {
		for _, busy := range []string{"rebase-merge", "rebase-apply", "BISECT_START"} {
			if _, err := os.Lstat(filepath.Join(d, busy)); !errors.Is(err, fs.ErrNotExist) {
				return errNotPlain
			}
		}
	}
	name := filepath.Base(path)
	admin := filepath.Join(common, "worktrees", name)
	if !plainWorktreeName(name) {
		return errNotPlain
	}
	if _, err := os.Lstat(admin); !errors.Is(err, fs.ErrNotExist) {
		return errNotPlain // git would take name1, name2, ...
	}
	return writeRegistration(path, admin, branch)
}

// writeRegistration makes path and its admin folder, and writes their
// files as git worktree add does; on a failure it removes both.
func writeRegistration(path, admin, branch string) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return err
	}
	if err := os.Mkdir(path, 0o777); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(admin), 0o777); err != nil {
		os.Remove(path)
		return err
	}
	if err := os.Mkdir(admin, 0o777); err != nil {
		os.Remove(path)
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(admin)
			os.RemoveAll(path)
		}
	}()
	realPath, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	realAdmin, err := filepath.EvalSymlinks(admin)
	if err != nil {
		return err
	}
	// locked first and removed last: a prune meanwhile (or after a kill)
	// leaves the registration alone, as it leaves git's own.
	for _, f := range [][2]string{
		{filepath.Join(admin, "locked"), "initializing"},
		{filepath.Join(admin, "gitdir"), filepath.Join(realPath, ".git")},
		{filepath.Join(path, ".git"), "gitdir: " + realAdmin},
		{filepath.Join(admin, "commondir"), "../.."},
		{filepath.Join(admin, "HEAD"), "ref: refs/heads/" + branch},
	} {
		if err := os.WriteFile(f[0], []byte(f[1]+"\n"), 0o666); err != nil {
			return err
		}
	}
	return os.Remove(filepath.Join(admin, "locked"))
}

// plainWorktreeName: a folder name git keeps as the admin folder's name
// (its sanitize_refname_component changes nothing in it).
func plainWorktreeName(name string) bool {
	if name == "" || name[0] == '.' || strings.Contains(name, "..") || strings.HasSuffix(name, ".lock") {
		return false
	}
	return strings.Trim(strings.ToLower(name), "abcdefghijklmnopqrstuvwxyz0123456789._-") == ""
}
