package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// CommonDir returns the absolute git common directory (the main .git
// directory, shared by all worktrees), for locks and state. It is cached.
func (c *Client) CommonDir(ctx context.Context) (string, error) {
	c.cdMu.Lock()
	defer c.cdMu.Unlock()
	if c.commonDir != "" {
		return c.commonDir, nil
	}
	out, err := c.run(ctx, "", nil, nil, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", fmt.Errorf("common dir: %w", err)
	}
	dir := trimNL(out)
	if dir == "" || !filepath.IsAbs(dir) {
		return "", fmt.Errorf("common dir: unexpected output %q", dir)
	}
	c.commonDir = filepath.Clean(dir)
	return c.commonDir, nil
}

// CurrentBranch returns the branch checked out in c.Dir (short name, e.g.
// "main"), or "" when HEAD is detached. An unborn branch is still returned.
//
// HEAD is read from its file where the files backend wrote it as git
// writes it (every command's base rule asks: one git process a command,
// issue 23); anything else (a ref outside refs/heads, an odd name, a
// symlink, no .git file to follow) asks git, so the answer is git's.
func (c *Client) CurrentBranch(ctx context.Context) (string, error) {
	if b, ok := headBranchFile(c.Dir); ok {
		return b, nil
	}
	out, err := c.run(ctx, "", nil, nil, "symbolic-ref", "-q", "HEAD")
	if err != nil {
		if exitCode(err) == 1 {
			return "", nil
		}
		return "", fmt.Errorf("current branch: %w", err)
	}
	ref := trimNL(out)
	return strings.TrimPrefix(ref, "refs/heads/"), nil
}

// headBranchFile reads the branch HEAD names in the worktree whose top is
// top from the files: "ref: refs/heads/<name>" gives name, a detached
// object id "". ok is false wherever git might answer otherwise.
func headBranchFile(top string) (branch string, ok bool) {
	gitDir := filepath.Join(top, ".git")
	fi, err := os.Lstat(gitDir)
	switch {
	case err != nil:
		return "", false
	case fi.Mode().IsRegular(): // a linked worktree's "gitdir: " link
		b, err := readPlain(gitDir)
		link, found := strings.CutPrefix(string(b), "gitdir: ")
		link = strings.TrimSuffix(link, "\n")
		if err != nil || !found || !filepath.IsAbs(link) || strings.ContainsAny(link, "\n\r") {
			return "", false
		}
		gitDir = link
	case !fi.IsDir():
		return "", false
	}
	fi, err = os.Lstat(filepath.Join(gitDir, "HEAD"))
	if err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	b, err := readPlain(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", false
	}
	head, found := strings.CutSuffix(string(b), "\n")
	if !found {
		return "", false
	}
	if name, found := strings.CutPrefix(head, "ref: refs/heads/"); found {
		return name, plainBranchName(name)
	}
	return "", hexID(head)
}

// plainBranchName is true for a branch name of letters, digits and
// "._-/" that git takes as it is (no "..", no empty part, no part that
// starts with "." or ends with ".lock").
func plainBranchName(name string) bool {
	if name == "" || strings.Contains(name, "..") {
		return false
	}
	for part := range strings.SplitSeq(name, "/") {
		if part == "" || part[0] == '.' || part[0] == '-' || strings.HasSuffix(part, ".lock") {
			return false
		}
		for _, r := range part {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
				return false
			}
		}
	}
	return true
}

// hexID is true for a full object id (SHA-1 or SHA-256) in lower case.
func hexID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// RevParse resolves rev to a full commit id (rev^{commit}); when rev already
// names an object type or a path (contains "^{" or ":"), it is resolved as
// given. It returns an error wrapping ErrNoRev when rev does not resolve.
func (c *Client) RevParse(ctx context.Context, rev string) (string, error) {
	spec := rev
	if !strings.Contains(rev, "^{") && !strings.Contains(rev, ":") {
		spec = rev + "^{commit}"
	}
	return c.resolve(ctx, spec, rev)
}

// RevParseAlone is RevParse in a `git rev-parse` of its own, never the
// shared resolver (PUSH_BASE's reads, once per push). The base poll's
// read, which a test once held mid-read with a git first on PATH, goes
// through the resolver since issue 25 §1.
func (c *Client) RevParseAlone(ctx context.Context, rev string) (string, error) {
	return c.revParse(ctx, rev+"^{commit}", rev)
}

// resolve resolves spec (through the resolver, else rev-parse --verify
// -q); display names it in errors.
func (c *Client) resolve(ctx context.Context, spec, display string) (string, error) {
	if spec == "" || display == "" {
		return "", fmt.Errorf("rev-parse %q: %w", display, ErrNoRev)
	}
	id, err := c.lookup(ctx, spec)
	switch {
	case err == nil:
		return id, nil
	case errors.Is(err, ErrNoRev):
		return "", fmt.Errorf("rev-parse %s: %w", display, ErrNoRev)
	case !errors.Is(err, errBatch):
		return "", fmt.Errorf("rev-parse %s: %w", display, err)
	}
	return c.revParse(ctx, spec, display)
}

// revParse runs rev-parse --verify -q on spec.
func (c *Client) revParse(ctx context.Context, spec, display string) (string, error) {
	if display == "" {
		return "", fmt.Errorf("rev-parse %q: %w", display, ErrNoRev)
	}
	out, err := c.run(ctx, "", nil, nil, "rev-parse", "--verify", "-q", "--end-of-options", spec)
	if err != nil {
		if exitCode(err) == 1 {
			return "", fmt.Errorf("rev-parse %s: %w", display, ErrNoRev)
		}
		return "", fmt.Errorf("rev-parse %s: %w", display, err)
	}
	return trimNL(out), nil
}

// BranchExists reports whether refs/heads/<name> exists.
func (c *Client) BranchExists(ctx context.Context, name string) (bool, error) {
	name = strings.TrimPrefix(name, "refs/heads/")
	if name == "" {
		return false, nil
	}
	// Asked of the resolver (one process fewer per attempt, issue 25 §1);
	// show-ref when it cannot answer.
	switch _, err := c.lookup(ctx, "refs/heads/"+name); {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNoRev):
		return false, nil
	case !errors.Is(err, errBatch):
		return false, fmt.Errorf("branch exists %s: %w", name, err)
	}
	_, err := c.run(ctx, "", nil, nil, "show-ref", "--verify", "--quiet", "refs/heads/"+name)
	if err != nil {
		if exitCode(err) == 1 {
			return false, nil
		}
		return false, fmt.Errorf("branch exists %s: %w", name, err)
	}
	return true, nil
}

// HasIdentity reports whether git has an explicit author and committer
// identity (GIT_AUTHOR_*/GIT_COMMITTER_* in Env, or user.name/user.email in
// the config git sees). Identities git would guess from the host name are
// not accepted: the check runs `git var GIT_{AUTHOR,COMMITTER}_IDENT` with
// user.useConfigOnly=true.
func (c *Client) HasIdentity(ctx context.Context) (bool, error) {
	// The run's git var -l (commitIdent, which the merges use) answers a
	// yes: a name and an email given for both (issue 25 §1: two git
	// processes fewer per run). Anything else is asked as before.
	if c.commitIdent(ctx).named {
		return true, nil
	}
	for _, v := range []string{"GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"} {
		if _, err := c.run(ctx, "", nil, nil, "-c", "user.useConfigOnly=true", "var", v); err != nil {
			if exitCode(err) > 0 {
				return false, nil
			}
			return false, fmt.Errorf("identity: %w", err)
		}
	}
	return true, nil
}

// IsAncestor reports whether commit a is an ancestor of (or equal to) b.
func (c *Client) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := c.run(ctx, "", nil, nil, "merge-base", "--is-ancestor", "--end-of-options", a, b)
	switch {
	case err == nil:
		return true, nil
	case exitCode(err) == 1:
		return false, nil
	default:
		return false, fmt.Errorf("is-ancestor %s %s: %w", a, b, err)
	}
}

// CountCommits returns the number of commits in from..to (reachable from to
// but not from from). from "" counts every commit reachable from to.
func (c *Client) CountCommits(ctx context.Context, from, to string) (int, error) {
	spec := to
	if from != "" {
		spec = from + ".." + to
	}
	out, err := c.run(ctx, "", nil, nil, "rev-list", "--count", "--end-of-options", spec)
	if err != nil {
		return 0, fmt.Errorf("count commits %s: %w", spec, err)
	}
	n, err := strconv.Atoi(trimNL(out))
	if err != nil {
		return 0, fmt.Errorf("count commits %s: %w", spec, err)
	}
	return n, nil
}

// DiffNames returns the paths (relative to the repository top) that differ
// between the trees of from and to (commits or trees), without rename
// detection, so a rename lists both paths. It uses plumbing
// (git diff-tree -r -z --name-only --no-renames) so user diff config does
// not apply.
func (c *Client) DiffNames(ctx context.Context, from, to string) ([]string, error) {
	out, err := c.run(ctx, "", nil, nil, "diff-tree", "-r", "-z", "--name-only", "--no-renames", "--end-of-options", from, to)
	if err != nil {
		return nil, fmt.Errorf("diff names %s %s: %w", from, to, err)
	}
	return splitNUL(out), nil
}

// DeleteBranch force-deletes refs/heads/<name> (git branch -D); callers
// guarantee the branch is merged. It fails while the branch is checked out
// in a worktree.
func (c *Client) DeleteBranch(ctx context.Context, name string) error {
	name = strings.TrimPrefix(name, "refs/heads/")
	if name == "" || strings.HasPrefix(name, "-") {
		return fmt.Errorf("delete branch %q: invalid name", name)
	}
	c.locks().wt.Lock() // branch -D reads .git/worktrees, which worktree add races with
	defer c.locks().wt.Unlock()
	c.locks().cfg.Lock() // and drops the branch's config section
	defer c.locks().cfg.Unlock()
	if _, err := c.run(ctx, "", nil, nil, "branch", "-D", name); err != nil {
		return fmt.Errorf("delete branch %s: %w", name, err)
	}
	return nil
}

// MoveRef moves ref from oldSHA to newSHA and deletes each ref of drop
// that still points at its value there, in one git update-ref --stdin
// transaction: all or nothing. A landing moves the base and deletes the
// branches it merged in one process, not an update-ref and a branch -D
// each (issue 25 §1). When the transaction fails (a dropped branch moved
// on since, or the ref itself), the ref alone is moved as UpdateRef moves
// it, with its errors (ErrStale); dropped then says the refs of drop were
// kept.
//
// A deleted branch's config section and its worktree are the caller's
// (DropBranchConfig, RemoveWorktree): git branch -D would refuse a branch
// a worktree has checked out, and the landing removes that worktree next.
func (c *Client) MoveRef(ctx context.Context, ref, newSHA, oldSHA string, drop map[string]string) (dropped bool, err error) {
	if len(drop) == 0 || oldSHA == "" {
		return false, c.UpdateRef(ctx, ref, newSHA, oldSHA)
	}
	var in strings.Builder
	fmt.Fprintf(&in, "update %s %s %s\n", ref, newSHA, oldSHA)
	names := make([]string, 0, len(drop))
	for name := range drop {
		names = append(names, name)
	}
	slices.Sort(names)
	ok := refWord(ref) && refWord(newSHA) && refWord(oldSHA)
	for _, name := range names {
		ok = ok && refWord(name) && refWord(drop[name]) && name != ref
		fmt.Fprintf(&in, "delete %s %s\n", name, drop[name])
	}
	if ok {
		if _, err := c.run(ctx, "", []byte(in.String()), nil, "update-ref", "--stdin"); err == nil {
			return true, nil
		}
	}
	return false, c.UpdateRef(ctx, ref, newSHA, oldSHA)
}

// refWord is true for a ref name or object id update-ref --stdin reads as
// one word: no space, no line break, no NUL, not empty.
func refWord(s string) bool {
	return s != "" && !strings.ContainsAny(s, " \t\n\r\x00")
}

// DropBranchConfig removes branch.<name>.* from the repository's config, as
// git branch -D does, for a branch deleted by MoveRef. Git is asked only
// when the config file names the branch (with LANES each branch has a
// description; without, none has a section). A section already gone is no
// error.
func (c *Client) DropBranchConfig(ctx context.Context, name string) error {
	name = strings.TrimPrefix(name, "refs/heads/")
	if name == "" || strings.HasPrefix(name, "-") {
		return fmt.Errorf("drop the config of branch %q: invalid name", name)
	}
	common, err := c.CommonDir(ctx)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(common, "config"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil && !bytes.Contains(b, []byte(name+"\"")) && !bytes.Contains(bytes.ToLower(b), []byte(strings.ToLower(name)+"]")) {
		return nil // no [branch "name"] (nor the old [branch.name]) section
	}
	c.locks().cfg.Lock() // the config file takes one writer at a time
	defer c.locks().cfg.Unlock()
	if _, err := c.run(ctx, "", nil, nil, "config", "--remove-section", "branch."+name); err != nil {
		if exitCode(err) == 128 && !c.hasBranchSection(ctx, name) {
			return nil // there was none (the name was only mentioned)
		}
		return fmt.Errorf("drop the config of branch %s: %w", name, err)
	}
	return nil
}

// hasBranchSection reports whether git reads any branch.<name>.* value
// from the repository's config file.
func (c *Client) hasBranchSection(ctx context.Context, name string) bool {
	out, err := c.run(ctx, "", nil, nil, "config", "--local", "--name-only", "--get-regexp", "^branch\\.")
	if err != nil {
		return false
	}
	prefix := "branch." + name + "."
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// UpdateRef sets ref to newSHA if it currently is oldSHA (git update-ref ref
// new old), atomically. oldSHA "" skips the check; an all-zero oldSHA
// requires that ref does not exist yet. Use full object ids. When the ref
// does not have oldSHA, the error satisfies errors.Is(err, ErrStale) (and
// errors.As *GitError).
func (c *Client) UpdateRef(ctx context.Context, ref, newSHA, oldSHA string) error {
	args := []string{"update-ref", "--end-of-options", ref, newSHA}
	if oldSHA != "" {
		args = append(args, oldSHA)
	}
	_, err := c.run(ctx, "", nil, nil, args...)
	if err == nil {
		return nil
	}
	if oldSHA != "" && exitCode(err) > 0 {
		// Classify without parsing (localized) stderr: look at the ref now.
		cur, rerr := c.run(ctx, "", nil, nil, "rev-parse", "--verify", "-q", "--end-of-options", ref)
		curSHA := trimNL(cur)
		switch {
		case rerr == nil && !strings.EqualFold(curSHA, oldSHA):
			return fmt.Errorf("update-ref %s: %w: %w", ref, ErrStale, err)
		case exitCode(rerr) == 1 && strings.Trim(oldSHA, "0") != "":
			return fmt.Errorf("update-ref %s: %w: %w", ref, ErrStale, err)
		}
	}
	return fmt.Errorf("update-ref %s: %w", ref, err)
}

// Exclude appends pattern as a line to <common-dir>/info/exclude unless that
// line is already there (creating the directory and file as needed). It is
// idempotent and never touches .gitignore. The exclude file is shared by all
// worktrees.
func (c *Client) Exclude(ctx context.Context, pattern string) error {
	if pattern == "" || strings.ContainsAny(pattern, "\n\r") {
		return fmt.Errorf("exclude %q: invalid pattern", pattern)
	}
	common, err := c.CommonDir(ctx)
	if err != nil {
		return fmt.Errorf("exclude %s: %w", pattern, err)
	}
	c.locks().ex.Lock()
	defer c.locks().ex.Unlock()
	// info/exclude is among what Protect keeps: this write is the
	// driver's own.
	return c.ownWrite(func() error { return appendLine(filepath.Join(common, "info", "exclude"), pattern) })
}

// appendLine appends pattern as a line to file unless that line is there.
func appendLine(file, pattern string) error {
	data, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("exclude %s: %w", pattern, err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.TrimSuffix(line, "\r") == pattern {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("exclude %s: %w", pattern, err)
	}
	var add bytes.Buffer
	if len(data) > 0 && data[len(data)-1] != '\n' {
		add.WriteByte('\n')
	}
	add.WriteString(pattern)
	add.WriteByte('\n')
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("exclude %s: %w", pattern, err)
	}
	if _, err := f.Write(add.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("exclude %s: %w", pattern, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("exclude %s: %w", pattern, err)
	}
	return nil
}

// GitDir returns the absolute git dir of the worktree whose top is dir,
// read from its .git (a folder, or a "gitdir:" link file) without a git
// process: the merge path asks for it twice per landing. Anything else
// (a subfolder, a GIT_DIR setup) asks git.
func (c *Client) GitDir(ctx context.Context, dir string) (string, error) {
	top := c.abs(dir)
	dotgit := filepath.Join(top, ".git")
	if fi, err := os.Lstat(dotgit); err == nil {
		if fi.IsDir() {
			return dotgit, nil
		}
		if fi.Mode().IsRegular() {
			if b, err := os.ReadFile(dotgit); err == nil {
				if p, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: "); ok && !strings.Contains(p, "\n") {
					if !filepath.IsAbs(p) {
						p = filepath.Join(top, p)
					}
					if fi, err := os.Stat(p); err == nil && fi.IsDir() {
						return filepath.Clean(p), nil
					}
				}
			}
		}
	}
	gd, err := c.GitIn(ctx, dir, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return "", err
	}
	return gd, nil
}
