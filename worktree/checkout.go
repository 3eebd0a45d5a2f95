package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// WouldOverwrite returns the local changes in worktree dir that block
// moving its checkout from oldSHA to newSHA, i.e. the paths for which
// MoveCheckout's read-tree would refuse: every path that differs locally from
// oldSHA (staged relative to oldSHA, modified or deleted in the working tree,
// untracked and not ignored) and that also changes between oldSHA and newSHA
// (DiffNames), including directory/file clashes (an untracked "a/x" where
// newSHA adds file "a", or the reverse). Local changes are measured against
// oldSHA, not HEAD, so it gives the same answer before and after the caller
// moves the branch ref. Like git merge, ignored files are not protected: a
// file newSHA adds over an ignored one replaces it.
//
// The result is sorted and includes paths the caller will pass as
// MoveCheckout's keep; filter those out yourself. Empty means MoveCheckout
// will succeed (barring concurrent changes).
func (c *Client) WouldOverwrite(ctx context.Context, dir, oldSHA, newSHA string) ([]string, error) {
	local, err := c.localChanges(ctx, dir, oldSHA)
	if err != nil {
		return nil, fmt.Errorf("would overwrite: %w", err)
	}
	changed, err := c.DiffNames(ctx, oldSHA, newSHA)
	if err != nil {
		return nil, fmt.Errorf("would overwrite: %w", err)
	}
	slices.Sort(changed)
	changedSet := make(map[string]bool, len(changed))
	for _, p := range changed {
		changedSet[p] = true
	}
	var hits []string
	for _, d := range local {
		hit := changedSet[d]
		for _, a := range ancestors(d) {
			hit = hit || changedSet[a]
		}
		if i, _ := slices.BinarySearch(changed, d+"/"); i < len(changed) && strings.HasPrefix(changed[i], d+"/") {
			hit = true
		}
		if hit {
			hits = append(hits, d)
		}
	}
	return hits, nil
}

// localChanges returns the sorted paths in worktree dir whose index entry
// differs from oldSHA or whose working-tree file differs from the index
// (including untracked, non-ignored files).
func (c *Client) localChanges(ctx context.Context, dir, oldSHA string) ([]string, error) {
	entries, err := c.status(ctx, dir)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, e := range entries {
		if e.y != ' ' {
			paths = append(paths, e.path)
		}
	}
	out, err := c.run(ctx, dir, nil, nil, "diff-index", "--cached", "--name-only", "-z", "--no-renames", "--end-of-options", oldSHA, "--")
	if err != nil {
		return nil, err
	}
	paths = append(paths, splitNUL(out)...)
	slices.Sort(paths)
	return slices.Compact(paths), nil
}

// keptFile is the saved state of one MoveCheckout keep path.
type keptFile struct {
	path   string // repository-relative
	exists bool
	data   []byte
	perm   fs.FileMode
	index  string // its `ls-files -s` line ("mode oid stage\tpath"), "" if not in the index
}

// MoveCheckout brings the checkout in worktree dir forward from oldSHA to
// newSHA the way `git merge` (fast-forward) would, after the caller moved
// that worktree's branch ref: HEAD already says newSHA but the index and
// files are still oldSHA's. It runs `git update-index -q --refresh` and then
// `git read-tree -m -u oldSHA newSHA` in dir, which updates the index and the
// files that change, carries every other local modification (staged,
// unstaged, untracked) along untouched, and refuses, changing nothing, when
// a local change is in the way. Call WouldOverwrite first to find out.
//
// keep lists repository-relative paths the caller manages itself and keeps
// intentionally dirty (the live manifest). For each, MoveCheckout:
//  1. saves its current working-tree content (or absence);
//  2. resets it to oldSHA's version in both the index and the working tree
//     (removing it when oldSHA lacks it), so read-tree does not refuse;
//  3. runs read-tree, after which the file holds newSHA's committed version
//     (or is absent when newSHA lacks it), in the index and on disk.
//
// The saved content is not written back on success: the caller rewrites the
// file (typically re-applying its live state on top of newSHA's version).
// If the reset or read-tree fails, the saved contents and index entries of
// the keep paths are restored (even if ctx is cancelled) and the error is
// returned; the rest of the checkout is then unchanged.
//
// dir must be the top level of a worktree (c.Dir or a Worktrees path). keep
// entries must be regular files (or absent). MoveCheckout does not check or
// move HEAD, and must not run concurrently with other git commands in dir.
func (c *Client) MoveCheckout(ctx context.Context, dir, oldSHA, newSHA string, keep []string) error {
	if err := c.moveCheckout(ctx, dir, oldSHA, newSHA, keep); err != nil {
		return fmt.Errorf("move checkout %s %s..%s: %w", c.abs(dir), short(oldSHA), short(newSHA), err)
	}
	return nil
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func (c *Client) moveCheckout(ctx context.Context, dir, oldSHA, newSHA string, keep []string) error {
	if oldSHA == "" || newSHA == "" {
		return errors.New("empty commit id")
	}
	keep = slices.Clone(keep)
	for _, p := range keep {
		if err := checkRelPath(p); err != nil {
			return err
		}
	}
	slices.Sort(keep)
	keep = slices.Compact(keep)
	top := c.abs(dir)

	if _, err := c.run(ctx, dir, nil, nil, "update-index", "-q", "--refresh"); err != nil && exitCode(err) != 1 {
		return err
	}
	if len(keep) == 0 {
		_, err := c.run(ctx, dir, nil, nil, "read-tree", "-m", "-u", "--end-of-options", oldSHA, newSHA)
		return err
	}

	saved, err := c.saveKeep(ctx, dir, top, keep)
	if err != nil {
		return err
	}
	err = c.resetKeep(ctx, dir, top, oldSHA, keep)
	if err == nil {
		_, err = c.run(ctx, dir, nil, nil, "read-tree", "-m", "-u", "--end-of-options", oldSHA, newSHA)
		if err == nil {
			return nil
		}
	}
	if rerr := c.restoreKeep(context.WithoutCancel(ctx), dir, top, saved); rerr != nil {
		return errors.Join(err, fmt.Errorf("restoring kept files: %w", rerr))
	}
	return err
}

// saveKeep records the working-tree content and index entry of each keep path.
func (c *Client) saveKeep(ctx context.Context, dir, top string, keep []string) ([]keptFile, error) {
	args := append([]string{"--literal-pathspecs", "ls-files", "-s", "-z", "--"}, keep...)
	out, err := c.run(ctx, dir, nil, nil, args...)
	if err != nil {
		return nil, err
	}
	index := map[string]string{}
	for _, f := range splitNUL(out) {
		if _, p, ok := strings.Cut(f, "\t"); ok {
			if _, dup := index[p]; dup {
				return nil, fmt.Errorf("kept file %q is unmerged", p)
			}
			index[p] = f
		}
	}
	saved := make([]keptFile, 0, len(keep))
	for _, p := range keep {
		k := keptFile{path: p, index: index[p]}
		file := filepath.Join(top, filepath.FromSlash(p))
		st, err := os.Lstat(file)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, err
		case !st.Mode().IsRegular():
			return nil, fmt.Errorf("kept file %q is not a regular file", p)
		default:
			k.exists, k.perm = true, st.Mode().Perm()
			if k.data, err = os.ReadFile(file); err != nil {
				return nil, err
			}
		}
		saved = append(saved, k)
	}
	return saved, nil
}

// resetKeep puts oldSHA's version of each keep path into the index and the
// working tree (or removes the path from both when oldSHA lacks it).
func (c *Client) resetKeep(ctx context.Context, dir, top, oldSHA string, keep []string) error {
	entries, err := c.lsTree(ctx, dir, oldSHA, keep)
	if err != nil {
		return err
	}
	var info strings.Builder
	var present, absent []string
	for _, p := range keep {
		e, ok := entries[p]
		switch {
		case !ok:
			fmt.Fprintf(&info, "0 %s\t%s\x00", zeroOID, p)
			absent = append(absent, p)
		case e.typ != "blob":
			return fmt.Errorf("kept path %q is a %s in %s", p, e.typ, short(oldSHA))
		default:
			fmt.Fprintf(&info, "%s %s\t%s\x00", e.mode, e.oid, p)
			present = append(present, p)
		}
	}
	if _, err := c.run(ctx, dir, []byte(info.String()), nil, "update-index", "-z", "--index-info"); err != nil {
		return err
	}
	if len(present) > 0 {
		args := append([]string{"checkout-index", "-f", "-u", "--"}, present...)
		if _, err := c.run(ctx, dir, nil, nil, args...); err != nil {
			return err
		}
	}
	for _, p := range absent {
		if err := os.Remove(filepath.Join(top, filepath.FromSlash(p))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// restoreKeep writes back the saved files and index entries.
func (c *Client) restoreKeep(ctx context.Context, dir, top string, saved []keptFile) error {
	var errs []error
	var info strings.Builder
	for _, k := range saved {
		file := filepath.Join(top, filepath.FromSlash(k.path))
		if k.exists {
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := os.WriteFile(file, k.data, k.perm); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := os.Chmod(file, k.perm); err != nil {
				errs = append(errs, err)
			}
		} else if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		if k.index != "" {
			info.WriteString(k.index)
		} else {
			fmt.Fprintf(&info, "0 %s\t%s", zeroOID, k.path)
		}
		info.WriteByte(0)
	}
	if _, err := c.run(ctx, dir, []byte(info.String()), nil, "update-index", "-z", "--index-info"); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.run(ctx, dir, nil, nil, "update-index", "-q", "--refresh"); err != nil && exitCode(err) != 1 {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// AdvanceCheckout brings the checkout in worktree dir forward from oldSHA to
// newSHA, after the caller moved that worktree's branch ref, without ever
// touching the files in skip (repository-relative paths the caller owns,
// such as a live manifest a human may be editing at this very moment):
// their index entries take newSHA's version while their bytes on disk stay
// as they are. Every other path that changes between the two commits is
// written from newSHA, in the index and on disk; nothing else is touched,
// so local changes elsewhere carry over. The caller checks WouldOverwrite
// first: this writes the changed paths unconditionally.
//
// Unlike `git read-tree -m -u`, which refuses a dirty path it must update,
// this never needs to reset the skip files, so no edit to them can fall in
// a window where git has put the committed version on disk.
func (c *Client) AdvanceCheckout(ctx context.Context, dir, oldSHA, newSHA string, skip []string) error {
	if err := c.advanceCheckout(ctx, dir, oldSHA, newSHA, skip); err != nil {
		return fmt.Errorf("advance checkout %s %s..%s: %w", c.abs(dir), short(oldSHA), short(newSHA), err)
	}
	return nil
}

func (c *Client) advanceCheckout(ctx context.Context, dir, oldSHA, newSHA string, skip []string) error {
	out, err := c.run(ctx, dir, nil, nil, "diff-tree", "-r", "--no-renames", "--name-status", "-z", oldSHA, newSHA)
	if err != nil {
		return err
	}
	fields := splitNUL(out)
	skipSet := make(map[string]bool, len(skip))
	for _, p := range skip {
		skipSet[p] = true
	}
	var upd, del, own []string
	for i := 0; i+1 < len(fields); i += 2 {
		status, p := fields[i], fields[i+1]
		switch {
		case skipSet[p]:
			own = append(own, p)
		case status == "D":
			del = append(del, p)
		default:
			upd = append(upd, p)
		}
	}
	top := c.abs(dir)
	if len(del) > 0 {
		if _, err := c.run(ctx, dir, nulList(del), nil, "--literal-pathspecs", "rm", "-q", "--cached", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
			return err
		}
		for _, p := range del {
			full := filepath.Join(top, filepath.FromSlash(p))
			if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			// Drop folders the deletion emptied, as git would.
			for d := filepath.Dir(full); d != top && strings.HasPrefix(d, top); d = filepath.Dir(d) {
				if os.Remove(d) != nil {
					break
				}
			}
		}
	}
	if len(upd) > 0 {
		if _, err := c.run(ctx, dir, nulList(upd), nil, "--literal-pathspecs", "checkout", newSHA, "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
			return err
		}
	}
	for _, p := range own {
		ls, err := c.run(ctx, dir, nil, nil, "--literal-pathspecs", "ls-tree", "-z", newSHA, "--", p)
		if err != nil {
			return err
		}
		entry := strings.TrimSuffix(string(ls), "\x00")
		if entry == "" {
			if _, err := c.run(ctx, dir, nil, nil, "update-index", "--force-remove", "--", p); err != nil {
				return err
			}
			continue
		}
		// "<mode> blob <sha>\t<path>"
		meta, _, _ := strings.Cut(entry, "\t")
		f := strings.Fields(meta)
		if len(f) != 3 {
			return fmt.Errorf("ls-tree %s: unexpected %q", p, entry)
		}
		if _, err := c.run(ctx, dir, nil, nil, "update-index", "--add", "--cacheinfo", f[0]+","+f[2]+","+p); err != nil {
			return err
		}
	}
	return nil
}

func nulList(paths []string) []byte {
	return []byte(strings.Join(paths, "\x00") + "\x00")
}
