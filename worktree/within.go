package worktree

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Within returns a client of c's repository for dir, with env, when git's
// own discovery from dir would find c.Dir: dir's real path is c.Dir or a
// folder under it, no folder on the way up (dir included, c.Dir not)
// holds a .git or a HEAD (a nested repository, a submodule's checkout, a
// bare repository or a git dir, where git would stop) or lies on another
// file system (where git's discovery stops), and env sets no
// GIT_CEILING_DIRECTORIES. ok is false otherwise, and the caller opens
// dir as before (Open). A CLI command opened its repository twice, from
// the current folder and from the roadmap folder: one git process each
// (issue 23). The client shares c's locks, as WithEnv's does.
func (c *Client) Within(dir string, env []string) (_ *Client, ok bool) {
	if c.Dir == "" || !filepath.IsAbs(dir) || ceilinged(env) {
		return nil, false
	}
	top, err := filepath.EvalSymlinks(c.Dir)
	if err != nil || top != c.Dir {
		return nil, false
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, false
	}
	rel, err := filepath.Rel(top, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, false
	}
	topDev, ok := device(top)
	if !ok {
		return nil, false
	}
	for p := real; p != top; p = filepath.Dir(p) {
		if filepath.Base(p) == ".git" {
			return nil, false
		}
		for _, name := range []string{".git", "HEAD"} {
			if missing, err := pathMissing(filepath.Join(p, name)); err != nil || !missing {
				return nil, false
			}
		}
		if dev, ok := device(p); !ok || dev != topDev {
			return nil, false
		}
	}
	return c.WithEnv(env), true
}

// ceilinged reports whether env (the process's when nil) sets
// GIT_CEILING_DIRECTORIES, which can stop git's discovery below the top.
func ceilinged(env []string) bool {
	if env == nil {
		_, set := os.LookupEnv("GIT_CEILING_DIRECTORIES")
		return set
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "GIT_CEILING_DIRECTORIES=") {
			return true
		}
	}
	return false
}

// device is the file system p lies on.
func device(p string) (uint64, bool) {
	fi, err := os.Stat(p)
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Dev), true // Dev is not a uint64 on every system
}
