package worktree

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The operations below are the driver's git vocabulary outside this
// package: each names what it does, so callers never spell git arguments
// (and never bypass a lock a worktree operation needs). dir is a worktree
// ("" means c.Dir).

// MergeBase is the best common ancestor of a and b.
func (c *Client) MergeBase(ctx context.Context, a, b string) (string, error) {
	return c.GitIn(ctx, "", "merge-base", a, b)
}

// AbsGitDir is the admin folder git resolves to when run in dir.
func (c *Client) AbsGitDir(ctx context.Context, dir string) (string, error) {
	return c.GitIn(ctx, dir, "rev-parse", "--absolute-git-dir")
}

// HeadRef is the ref HEAD points at in dir ("refs/heads/…"); an error
// when HEAD is detached.
func (c *Client) HeadRef(ctx context.Context, dir string) (string, error) {
	return c.GitIn(ctx, dir, "symbolic-ref", "-q", "HEAD")
}

// MergeInProgress is true when dir has a merge under way (MERGE_HEAD).
func (c *Client) MergeInProgress(ctx context.Context, dir string) bool {
	_, err := c.GitIn(ctx, dir, "rev-parse", "-q", "--verify", "MERGE_HEAD")
	return err == nil
}

// MergeInProgressIn is MergeInProgress for a worktree whose admin folder
// gitDir the caller has checked: without a MERGE_HEAD file there (git
// writes it as a file whatever its ref storage) no merge is under way,
// and no git process is needed to say so; with one, git is asked.
func (c *Client) MergeInProgressIn(ctx context.Context, dir, gitDir string) bool {
	if _, err := os.Lstat(filepath.Join(gitDir, "MERGE_HEAD")); errors.Is(err, fs.ErrNotExist) {
		return false
	}
	return c.MergeInProgress(ctx, dir)
}

// MergeInto merges ref into the branch checked out in dir (a merge commit
// with the default message). Conflicts are left in place.
func (c *Client) MergeInto(ctx context.Context, dir, ref string) error {
	_, err := c.GitIn(ctx, dir, "merge", "--no-edit", ref)
	return err
}

// MergeAbort gives up the merge under way in dir.
func (c *Client) MergeAbort(ctx context.Context, dir string) error {
	_, err := c.GitIn(ctx, dir, "merge", "--abort")
	return err
}

// TakeTheirs resolves a conflict on path in dir with the side being
// merged in.
func (c *Client) TakeTheirs(ctx context.Context, dir, path string) error {
	_, err := c.GitIn(ctx, dir, "checkout", "--theirs", "--", path)
	return err
}

// Stage adds paths in dir to the index.
func (c *Client) Stage(ctx context.Context, dir string, paths ...string) error {
	_, err := c.GitIn(ctx, dir, append([]string{"add", "--"}, paths...)...)
	return err
}

// StageAll stages every change in dir, new files and deletions included.
func (c *Client) StageAll(ctx context.Context, dir string) error {
	_, err := c.GitIn(ctx, dir, "add", "-A")
	return err
}

// ConcludeMerge commits the merge under way in dir with its message.
func (c *Client) ConcludeMerge(ctx context.Context, dir string) error {
	_, err := c.GitIn(ctx, dir, "commit", "--no-edit", "-q")
	return err
}

// Unmerged lists the paths with conflicts in dir, among paths if any are
// given.
func (c *Client) Unmerged(ctx context.Context, dir string, paths ...string) ([]string, error) {
	args := []string{"diff", "--name-only", "--diff-filter=U"}
	if len(paths) > 0 {
		args = append(append(args, "--"), paths...)
	}
	out, err := c.GitIn(ctx, dir, args...)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// HasStaged is true when dir's index differs from its HEAD.
func (c *Client) HasStaged(ctx context.Context, dir string) bool {
	_, err := c.GitIn(ctx, dir, "diff", "--cached", "--quiet")
	return err != nil
}

// StagedStatus maps each staged path in dir to its status letter (A, M,
// D, T), renames not followed.
func (c *Client) StagedStatus(ctx context.Context, dir string) (map[string]byte, error) {
	out, err := c.GitIn(ctx, dir, "diff", "--cached", "--name-status", "--no-renames", "-z")
	if err != nil {
		return nil, err
	}
	f := strings.Split(out, "\x00")
	m := map[string]byte{}
	for i := 0; i+1 < len(f); i += 2 {
		if f[i] != "" {
			m[f[i+1]] = f[i][0]
		}
	}
	return m, nil
}

// StagedBlob is the content of path as staged in dir.
func (c *Client) StagedBlob(ctx context.Context, dir, path string) (string, error) {
	return c.GitIn(ctx, dir, "cat-file", "blob", ":"+path)
}

// onlyMarkers turns off every whitespace check of `git diff --check`, so
// what it reports is conflict markers alone.
const onlyMarkers = "core.whitespace=-trailing-space,-space-before-tab,-indent-with-non-tab,-tab-in-indent,-blank-at-eof"

// MarkerCandidates lists, once each, the files whose added lines git sees
// as leftover conflict markers: between from and to, or staged in dir
// when from is "". A line of seven '=' alone is also a markdown
// underline, so callers confirm on the content.
func (c *Client) MarkerCandidates(ctx context.Context, dir, from, to string) ([]string, error) {
	args := []string{"-c", onlyMarkers, "diff", "--check", "--no-color"}
	if from == "" {
		args = append(args, "--cached")
	} else {
		args = append(args, from, to)
	}
	out, err := c.GitIn(ctx, dir, args...)
	// It exits 2 when it finds anything, so read the output then; any
	// other failure means the diff was not read.
	if ge := (*GitError)(nil); errors.As(err, &ge) && ge.ExitCode == 2 {
		err = nil
	}
	if err != nil {
		return nil, err
	}
	var paths []string
	seen := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, "leftover conflict marker") {
			continue
		}
		p, _, _ := strings.Cut(line, ":")
		if !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// DiffSince is the patch from the merge base of base and head to head
// (git diff base...head).
func (c *Client) DiffSince(ctx context.Context, base, head string) (string, error) {
	return c.GitIn(ctx, "", "diff", base+"..."+head)
}

// ForceCheckout checks branch out in dir, discarding local changes.
func (c *Client) ForceCheckout(ctx context.Context, dir, branch string) error {
	_, err := c.GitIn(ctx, dir, "checkout", "-q", "-f", branch)
	return err
}

// RemoteURL is the URL of remote name.
func (c *Client) RemoteURL(ctx context.Context, name string) (string, error) {
	return c.GitIn(ctx, "", "remote", "get-url", name)
}

// FastForward moves the branch checked out in dir to ref, only forward.
func (c *Client) FastForward(ctx context.Context, dir, ref string) error {
	_, err := c.GitIn(ctx, dir, "merge", "--ff-only", "--quiet", ref)
	return err
}

// CommitStaged commits what is staged in dir with message msg (read from
// stdin, so any text is safe).
func (c *Client) CommitStaged(ctx context.Context, dir, msg string) error {
	_, err := c.GitInput(ctx, dir, []byte(msg), "commit", "-q", "-F", "-")
	return err
}

// Unstage resets the index entries of paths in dir (every entry when
// paths is nil) to HEAD, leaving the files in the checkout as they are.
// Paths are literal and passed on stdin, so any name is safe.
func (c *Client) Unstage(ctx context.Context, dir string, paths []string) error {
	args := []string{"--literal-pathspecs", "reset", "-q"}
	var in []byte
	if paths != nil {
		args = append(args, "--pathspec-from-file=-", "--pathspec-file-nul")
		in = []byte(strings.Join(paths, "\x00") + "\x00")
	}
	_, err := c.GitInput(ctx, dir, in, args...)
	return err
}

// RestorePaths checks paths (literal) out from the index in dir,
// discarding their changes in the checkout; a deleted file comes back.
// Paths are passed on stdin; none is nothing to do.
func (c *Client) RestorePaths(ctx context.Context, dir string, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	in := []byte(strings.Join(paths, "\x00") + "\x00")
	_, err := c.GitInput(ctx, dir, in, "--literal-pathspecs", "checkout", "-q", "--pathspec-from-file=-", "--pathspec-file-nul", "--")
	return err
}

// IndexMatches is true when dir's index holds from's version of every
// one of paths (literal).
func (c *Client) IndexMatches(ctx context.Context, dir, from string, paths []string) bool {
	args := append([]string{"--literal-pathspecs", "diff-index", "--cached", "--quiet", from, "--"}, paths...)
	_, err := c.GitIn(ctx, dir, args...)
	return err == nil
}

// ChangedPaths lists the modified and untracked files of the checkout
// dir, relative and slash-separated (ignored files are not listed). It
// takes no optional lock: the look never holds the index lock against
// the user or the driver.
func (c *Client) ChangedPaths(ctx context.Context, dir string) ([]string, error) {
	// Submodules are not looked into: git would run git there, with
	// their config (Populated).
	out, err := c.GitIn(ctx, dir, "--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=all")
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, e := range strings.Split(out, "\x00") {
		if len(e) >= 4 {
			paths = append(paths, e[3:])
		}
	}
	return paths, nil
}

// AddedLines is the patch, with no context lines, of from..to: the diff
// of the two trees, or with history each commit's own (merges left out,
// each headed "commit <sha>").
func (c *Client) AddedLines(ctx context.Context, from, to string, history bool) (string, error) {
	args := []string{"-c", "core.quotePath=false"}
	common := []string{"-p", "-U0", "--no-color", "--no-ext-diff", "--no-renames", "--no-textconv"}
	if !history {
		args = append(append(append(args, "diff"), common...), "--end-of-options", from, to)
	} else {
		args = append(append(append(args, "log", "--no-merges", "--format=commit %H"), common...), "--end-of-options", from+".."+to)
	}
	return c.GitIn(ctx, "", args...)
}

// RemoteHasBranch is true when remote has branch (no hook runs): exactly
// refs/heads/<branch>, not a ref that only ends so (RemoteTips).
func (c *Client) RemoteHasBranch(ctx context.Context, remote, branch string) (bool, error) {
	tips, err := c.RemoteTips(ctx, remote, branch)
	if err != nil {
		return false, err
	}
	return tips[branch] != "", nil
}

// RemoteTips reads the tips of branches on remote from one ls-remote (no
// hook runs): branch name to object id, a branch the remote lacks absent.
// ls-remote matches its patterns as tails of the remote's refs, so only
// refs/heads/<branch> exactly is taken. Where the caller would fetch a
// branch that has not moved, this answers from one process fewer (the
// fetch's connectivity check) and tells a missing branch from an error.
func (c *Client) RemoteTips(ctx context.Context, remote string, branches ...string) (map[string]string, error) {
	args := []string{"-c", "core.hooksPath=/dev/null", "ls-remote", "--heads", remote}
	want := map[string]string{}
	for _, b := range branches {
		args = append(args, "refs/heads/"+b)
		want["refs/heads/"+b] = b
	}
	out, err := c.remote(ctx, args...)
	if err != nil {
		return nil, err
	}
	tips := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		id, ref, ok := strings.Cut(line, "\t")
		if b, mine := want[ref]; ok && mine {
			tips[b] = id
		}
	}
	return tips, nil
}

// PushBranch pushes branch to the same name on remote, never forced (no
// hook runs).
func (c *Client) PushBranch(ctx context.Context, remote, branch string) error {
	_, err := c.remote(ctx, "-c", "core.hooksPath=/dev/null", "push", "--quiet", remote, "refs/heads/"+branch+":refs/heads/"+branch)
	return err
}

// HeadIs is HeadRef for a worktree whose admin folder gitDir the caller
// has checked (work.OwnGitDir): when gitDir/HEAD names ref, as the files
// backend writes it, that is the answer without a git process. Anything
// else (a detached HEAD, another branch, a reftable stub, an unreadable
// file) asks git, so the answer is git's whenever it is not ref.
func (c *Client) HeadIs(ctx context.Context, dir, gitDir, ref string) (string, error) {
	if b, err := readPlain(filepath.Join(gitDir, "HEAD")); err == nil && string(b) == "ref: "+ref+"\n" {
		return ref, nil
	}
	return c.HeadRef(ctx, dir)
}
