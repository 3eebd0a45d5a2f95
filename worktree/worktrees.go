package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Worktree is one entry of `git worktree list`.
type Worktree struct {
	Path     string // absolute path of the worktree
	Head     string // commit id checked out ("" for a bare or unborn entry)
	Branch   string // short branch name ("" when detached)
	Detached bool
	Prunable bool // its directory is gone; `git worktree prune` would drop it
	Locked   bool
	Bare     bool // the main entry of a bare repository
}

// AddWorktree creates a worktree at path on a new branch started at start
// (git worktree add -b branch path start; start "" means HEAD). If branch
// already exists and path does not, the existing branch is checked out there
// instead (git worktree add path branch), which resumes an interrupted run.
// If branch exists and is already checked out at path, it does nothing.
// A relative path is relative to c.Dir. Stale registrations of missing
// worktrees are pruned first. Serialized with the other worktree operations.
func (c *Client) AddWorktree(ctx context.Context, path, branch, start string) error {
	return c.AddWorktreeKnown(ctx, path, branch, start, nil)
}

// AddWorktreeKnown is AddWorktree for a caller that has just looked the
// branch up (exists non-nil): the lookup is not made twice.
func (c *Client) AddWorktreeKnown(ctx context.Context, path, branch, start string, exists *bool) error {
	path = c.abs(path)
	branch = strings.TrimPrefix(branch, "refs/heads/")
	if err := c.addWorktree(ctx, path, branch, start, exists); err != nil {
		return fmt.Errorf("worktree add %s: %w", path, err)
	}
	return nil
}

func (c *Client) addWorktree(ctx context.Context, path, branch, start string, known *bool) error {
	if branch == "" || strings.HasPrefix(branch, "-") {
		return fmt.Errorf("invalid branch name %q", branch)
	}
	made, err := c.registerWorktree(ctx, path, branch, start, known)
	if err != nil || !made {
		return err
	}
	if c.registered != nil {
		c.registered()
	}
	// The checkout runs outside the worktree lock: it writes only this
	// worktree's index and files, so the next phase's add need not wait
	// for it (issue 25 §2: a level's four adds ran one after the other,
	// each with its checkout, 0.6-1.0 s apiece at load 30). Cut off by a
	// kill, the worktree has no index, which a later attempt takes for a
	// checkout never populated: set aside and made again.
	_, err = c.run(ctx, path, nil, nil, "reset", "--hard", "--no-recurse-submodules", "--quiet")
	return err
}

// registerWorktree is the part of addWorktree that must hold the worktree
// lock: git worktree add --no-checkout (and the branch). made is false when
// the worktree was there already.
func (c *Client) registerWorktree(ctx context.Context, path, branch, start string, known *bool) (made bool, err error) {
	c.locks().wt.Lock()
	defer c.locks().wt.Unlock()
	var exists bool
	if known != nil {
		exists = *known
	} else {
		var err error
		if exists, err = c.BranchExists(ctx, branch); err != nil {
			return false, err
		}
	}
	missing, err := pathMissing(path)
	if err != nil {
		return false, err
	}
	if exists && !missing {
		wts, err := c.worktrees(ctx)
		if err != nil {
			return false, err
		}
		for _, wt := range wts {
			if wt.Branch == branch && !wt.Prunable && samePath(wt.Path, path) {
				return false, nil
			}
		}
		return false, fmt.Errorf("branch %s exists and %s already exists", branch, path)
	}
	if exists && missing {
		// Written as git writes it where nothing is odd (2 processes
		// fewer an attempt); git otherwise.
		switch err := c.registerFromFiles(ctx, path, branch); {
		case err == nil:
			return true, nil
		case !errors.Is(err, errNotPlain):
			return false, err
		}
	}
	args := []string{"worktree", "add", "--quiet", "--no-checkout"}
	if exists {
		args = append(args, path, branch)
	} else {
		args = append(args, "-b", branch, path)
		if start != "" {
			args = append(args, start)
		}
	}
	_, err = c.run(ctx, "", nil, nil, args...)
	if err != nil && missing {
		// A stale registration (of this path, or of the branch at a
		// folder that is gone) refuses the add: prune, then once more.
		// Pruning only then keeps it off every add.
		if _, perr := c.run(ctx, "", nil, nil, "worktree", "prune"); perr != nil {
			return false, perr
		}
		if !exists {
			// worktree add -b may have made the branch before it
			// refused the folder.
			if now, berr := c.BranchExists(ctx, branch); berr != nil {
				return false, berr
			} else if now {
				args = []string{"worktree", "add", "--quiet", "--no-checkout", path, branch}
			}
		}
		_, err = c.run(ctx, "", nil, nil, args...)
	}
	return err == nil, err
}

// RemoveWorktree removes the worktree at path with its local changes
// (git worktree remove --force). When path no longer exists it prunes stale
// registrations instead and returns nil. Serialized.
func (c *Client) RemoveWorktree(ctx context.Context, path string) error {
	path = c.abs(path)
	c.locks().wt.Lock()
	defer c.locks().wt.Unlock()
	missing, err := pathMissing(path)
	if err != nil {
		return fmt.Errorf("worktree remove %s: %w", path, err)
	}
	args := []string{"worktree", "remove", "--force", path}
	if missing {
		args = []string{"worktree", "prune"}
	}
	if _, err := c.run(ctx, "", nil, nil, args...); err != nil {
		return fmt.Errorf("worktree remove %s: %w", path, err)
	}
	return nil
}

// Prune drops registrations of worktrees whose directories are gone
// (git worktree prune). Serialized.
func (c *Client) Prune(ctx context.Context) error {
	c.locks().wt.Lock()
	defer c.locks().wt.Unlock()
	if _, err := c.run(ctx, "", nil, nil, "worktree", "prune"); err != nil {
		return fmt.Errorf("worktree prune: %w", err)
	}
	return nil
}

// Worktrees lists the repository's worktrees, the main one first
// (git worktree list --porcelain -z). Serialized with add/remove/prune, since
// listing reads the .git/worktrees entries those create and delete.
func (c *Client) Worktrees(ctx context.Context) ([]Worktree, error) {
	c.locks().wt.Lock()
	defer c.locks().wt.Unlock()
	return c.worktrees(ctx)
}

// worktrees is Worktrees without the lock; callers hold the worktree lock.
func (c *Client) worktrees(ctx context.Context) ([]Worktree, error) {
	out, err := c.run(ctx, "", nil, nil, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, fmt.Errorf("worktree list: %w", err)
	}
	return parseWorktrees(out), nil
}

// parseWorktrees parses `git worktree list --porcelain -z`: attribute fields
// terminated by NUL, records terminated by an empty field.
func parseWorktrees(out []byte) []Worktree {
	var (
		wts []Worktree
		cur *Worktree
	)
	for f := range strings.SplitSeq(string(out), "\x00") {
		if f == "" {
			cur = nil
			continue
		}
		key, val, _ := strings.Cut(f, " ")
		if key == "worktree" {
			wts = append(wts, Worktree{Path: val})
			cur = &wts[len(wts)-1]
			continue
		}
		if cur == nil {
			continue
		}
		switch key {
		case "HEAD":
			cur.Head = val
		case "branch":
			cur.Branch = strings.TrimPrefix(val, "refs/heads/")
		case "detached":
			cur.Detached = true
		case "bare":
			cur.Bare = true
		case "locked":
			cur.Locked = true
		case "prunable":
			cur.Prunable = true
		}
	}
	return wts
}

// WorktreeOf returns the path of the worktree that has refs/heads/<branch>
// checked out, if any. Prunable entries (directory gone) do not count. It
// reads the HEAD files git's list reads (worktreeOfFiles): a `git worktree
// list` per landing before (issue 25 §1); where they are not plain, git is
// asked.
func (c *Client) WorktreeOf(ctx context.Context, branch string) (string, bool, error) {
	branch = strings.TrimPrefix(branch, "refs/heads/")
	if dir, ok, err := c.worktreeOfFiles(ctx, branch); err == nil {
		return dir, ok, nil
	}
	wts, err := c.Worktrees(ctx)
	if err != nil {
		return "", false, err
	}
	for _, wt := range wts {
		if wt.Branch == branch && !wt.Prunable && !wt.Bare {
			return wt.Path, true, nil
		}
	}
	return "", false, nil
}

// errNotPlain: the repository's worktree files are not as worktreeOfFiles
// reads them; git is asked.
var errNotPlain = errors.New("worktree files not plain")

// worktreeOfFiles is WorktreeOf from the files `git worktree list` reads:
// the main worktree's HEAD (when c.Dir is the main worktree, its .git the
// common dir: not bare) and each admin folder's HEAD and gitdir (the link
// back to its worktree's .git; a link to nothing is prunable). errNotPlain
// when the client's folder is not the main worktree or a file cannot be
// read.
func (c *Client) worktreeOfFiles(ctx context.Context, branch string) (string, bool, error) {
	common, err := c.CommonDir(ctx)
	if err != nil {
		return "", false, err
	}
	top, err := filepath.Abs(c.abs(""))
	if err != nil {
		return "", false, errNotPlain
	}
	if fi, err := os.Lstat(filepath.Join(top, ".git")); err != nil || !fi.IsDir() || !samePath(filepath.Join(top, ".git"), common) {
		return "", false, errNotPlain
	}
	want := "ref: refs/heads/" + branch
	head, err := readPlain(filepath.Join(common, "HEAD"))
	if err != nil {
		return "", false, errNotPlain
	}
	if strings.TrimSpace(string(head)) == want {
		return top, true, nil
	}
	admins, err := os.ReadDir(filepath.Join(common, "worktrees"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, errNotPlain
	}
	for _, a := range admins {
		admin := filepath.Join(common, "worktrees", a.Name())
		head, err := readPlain(filepath.Join(admin, "HEAD"))
		if err != nil {
			return "", false, errNotPlain
		}
		if strings.TrimSpace(string(head)) != want {
			continue
		}
		back, err := readPlain(filepath.Join(admin, "gitdir"))
		if err != nil {
			return "", false, errNotPlain
		}
		link := strings.TrimSpace(string(back))
		if !filepath.IsAbs(link) {
			link = filepath.Join(admin, link)
		}
		if _, err := os.Stat(link); err != nil {
			continue // prunable: its folder is gone
		}
		return filepath.Dir(filepath.Clean(link)), true, nil
	}
	return "", false, nil
}

// samePath compares two absolute paths, resolving symlinks where possible.
func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// UnlockWorktree drops the lock of the worktree at path (git worktree
// unlock); a worktree that is not locked, or not registered, is not an
// error. A `git worktree add` that was killed leaves its worktree locked
// ("initializing"), and a locked worktree is never pruned. Serialized.
func (c *Client) UnlockWorktree(ctx context.Context, path string) error {
	c.locks().wt.Lock()
	defer c.locks().wt.Unlock()
	return c.unlockWorktree(ctx, c.abs(path))
}

// unlockWorktree is UnlockWorktree for a caller that holds the worktree
// lock.
func (c *Client) unlockWorktree(ctx context.Context, path string) error {
	wts, err := c.worktrees(ctx)
	if err != nil {
		return err
	}
	for _, wt := range wts {
		if wt.Locked && samePath(wt.Path, path) {
			if _, err := c.run(ctx, "", nil, nil, "worktree", "unlock", wt.Path); err != nil {
				return fmt.Errorf("worktree unlock %s: %w", path, err)
			}
		}
	}
	return nil
}

// MoveWorktree moves the worktree at from to to (git worktree move), for
// a worktree whose place changed. Serialized with the other worktree
// operations.
func (c *Client) MoveWorktree(ctx context.Context, from, to string) error {
	from, to = c.abs(from), c.abs(to)
	c.locks().wt.Lock()
	defer c.locks().wt.Unlock()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return fmt.Errorf("worktree move %s: %w", from, err)
	}
	if _, err := c.run(ctx, "", nil, nil, "worktree", "move", from, to); err != nil {
		return fmt.Errorf("worktree move %s: %w", from, err)
	}
	return nil
}

// WorktreesNoHead is Worktrees without the Head of each entry, read from
// the files `git worktree list` reads where they are plain (the main
// worktree's HEAD; each admin folder's HEAD, gitdir and locked): the
// stray-write watch's list at every attempt's start was a git process
// (issue 23). Where a file is not as git's own tools write it, git is
// asked. A listing only: which registrations are stale enough to drop is
// git's word alone (Prune), since agents can write the admin folders.
func (c *Client) WorktreesNoHead(ctx context.Context) ([]Worktree, error) {
	c.locks().wt.Lock()
	defer c.locks().wt.Unlock()
	if wts, err := c.worktreesFromFiles(ctx); err == nil {
		return wts, nil
	}
	wts, err := c.worktrees(ctx)
	for i := range wts {
		wts[i].Head = ""
	}
	return wts, err
}

// worktreesFromFiles lists the worktrees as git 2.39's get_worktrees
// does: the main one (c.Dir, whose .git is the common dir), then each
// admin folder whose gitdir names its worktree's .git file (the
// worktree's path: that name without "/.git"); prunable when that file
// is gone and the worktree is not locked. errNotPlain for anything else.
func (c *Client) worktreesFromFiles(ctx context.Context) ([]Worktree, error) {
	common, err := c.CommonDir(ctx)
	if err != nil {
		return nil, err
	}
	top, err := filepath.Abs(c.abs(""))
	if err != nil {
		return nil, errNotPlain
	}
	if fi, err := os.Lstat(filepath.Join(top, ".git")); err != nil || !fi.IsDir() || !samePath(filepath.Join(top, ".git"), common) {
		return nil, errNotPlain
	}
	main := Worktree{Path: top}
	if err := readHeadFile(filepath.Join(common, "HEAD"), &main); err != nil {
		return nil, err
	}
	wts := []Worktree{main}
	admins, err := os.ReadDir(filepath.Join(common, "worktrees"))
	if errors.Is(err, fs.ErrNotExist) {
		return wts, nil
	}
	if err != nil {
		return nil, errNotPlain
	}
	for _, a := range admins {
		admin := filepath.Join(common, "worktrees", a.Name())
		back, err := readPlain(filepath.Join(admin, "gitdir"))
		if err != nil || !a.IsDir() {
			return nil, errNotPlain
		}
		link := strings.TrimRight(string(back), " \t\r\n")
		path, ok := strings.CutSuffix(link, "/.git")
		if !ok || !filepath.IsAbs(link) || filepath.Clean(path) != path {
			return nil, errNotPlain
		}
		wt := Worktree{Path: path}
		if err := readHeadFile(filepath.Join(admin, "HEAD"), &wt); err != nil {
			return nil, err
		}
		switch _, err := os.Lstat(filepath.Join(admin, "locked")); {
		case err == nil:
			wt.Locked = true
		case !errors.Is(err, fs.ErrNotExist):
			return nil, errNotPlain
		}
		switch _, err := os.Stat(link); {
		case errors.Is(err, fs.ErrNotExist):
			wt.Prunable = !wt.Locked
		case err != nil:
			return nil, errNotPlain
		}
		wts = append(wts, wt)
	}
	return wts, nil
}

// readHeadFile sets wt's Branch (a HEAD "ref: refs/heads/<name>") or
// Detached (a HEAD that is a commit id); errNotPlain for any other HEAD.
func readHeadFile(p string, wt *Worktree) error {
	b, err := readPlain(p)
	if err != nil {
		return errNotPlain
	}
	head := strings.TrimRight(string(b), "\n")
	if name, ok := strings.CutPrefix(head, "ref: refs/heads/"); ok && name != "" && !strings.ContainsAny(name, " \t\r\n") {
		wt.Branch = name
		return nil
	}
	if (len(head) == 40 || len(head) == 64) && strings.Trim(head, "0123456789abcdef") == "" {
		wt.Detached = true
		return nil
	}
	return errNotPlain
}
