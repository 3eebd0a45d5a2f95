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

// WouldOverwrite returns the local changes in worktree dir that moving its
// checkout from oldSHA to newSHA would clobber, which AdvanceCheckout
// writes over unconditionally: every path that differs locally from
// oldSHA (staged relative to oldSHA, modified or deleted in the working tree,
// untracked and not ignored) and that also changes between oldSHA and newSHA
// (DiffNames), including directory/file clashes (an untracked "a/x" where
// newSHA adds file "a", or the reverse). Local changes are measured against
// oldSHA, not HEAD, so it gives the same answer before and after the caller
// moves the branch ref. Like git merge, ignored files are not protected: a
// file newSHA adds over an ignored one replaces it.
//
// The result is sorted and includes paths the caller will pass as
// AdvanceCheckout's skip; filter those out yourself. Empty means the
// advance clobbers nothing (barring concurrent changes).
func (c *Client) WouldOverwrite(ctx context.Context, dir, oldSHA, newSHA string) ([]string, error) {
	hits, _, err := c.WouldOverwriteDiff(ctx, dir, oldSHA, newSHA)
	return hits, err
}

// TreeDiff is the difference between two commits as the checkout's move
// reads it (diff-tree --raw), read once by WouldOverwriteDiff and handed
// to IndexLock.AdvanceDiff: two commits' difference cannot change.
type TreeDiff struct {
	old, new string
	fields   []string // NUL-separated diff-tree -z --raw output
}

// treeDiff reads the raw difference between two commits: from their
// trees through the long-lived cat-file (readTreeDiff), or from git
// diff-tree where that cannot answer.
func (c *Client) treeDiff(ctx context.Context, oldSHA, newSHA string) (*TreeDiff, error) {
	if fields, err := c.readTreeDiff(ctx, oldSHA, newSHA); err == nil {
		return &TreeDiff{old: oldSHA, new: newSHA, fields: fields}, nil
	}
	out, err := c.run(ctx, "", nil, nil, "diff-tree", "-r", "--no-renames", "--raw", "-z", "--end-of-options", oldSHA, newSHA)
	if err != nil {
		return nil, err
	}
	return &TreeDiff{old: oldSHA, new: newSHA, fields: splitNUL(out)}, nil
}

// paths lists the changed paths.
func (d *TreeDiff) paths() []string {
	var ps []string
	for i := 0; i+1 < len(d.fields); i += 2 {
		ps = append(ps, d.fields[i+1])
	}
	return ps
}

// WouldOverwriteDiff is WouldOverwrite that also returns the difference it
// read, for IndexLock.AdvanceDiff.
func (c *Client) WouldOverwriteDiff(ctx context.Context, dir, oldSHA, newSHA string) ([]string, *TreeDiff, error) {
	d, err := c.treeDiff(ctx, oldSHA, newSHA)
	if err != nil {
		return nil, nil, fmt.Errorf("would overwrite: diff %s %s: %w", oldSHA, newSHA, err)
	}
	hits, err := c.wouldOverwrite(ctx, dir, oldSHA, d.paths())
	return hits, d, err
}

func (c *Client) wouldOverwrite(ctx context.Context, dir, oldSHA string, changed []string) ([]string, error) {
	if len(changed) == 0 {
		return nil, nil
	}
	slices.Sort(changed)
	// Only the changed paths and the folders above them can be in the way:
	// asking git about just those saves a status of the whole tree, which
	// on a large repository is most of a merge's cost. (A folder pathspec
	// covers what is below it: an untracked "a/x" where a file "a" comes.)
	var scope []string
	if len(changed) <= maxPathspecs {
		seen := make(map[string]bool, len(changed))
		for _, p := range changed {
			for _, q := range append(ancestors(p), p) {
				if !seen[q] {
					seen[q] = true
					scope = append(scope, q)
				}
			}
		}
	}
	local, err := c.localChanges(ctx, dir, oldSHA, scope...)
	if err != nil {
		return nil, fmt.Errorf("would overwrite: %w", err)
	}
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
// (including untracked, non-ignored files). One git status answers both
// when the checkout's HEAD is oldSHA (the usual case: the base checkout
// before the driver moves the base): its staged column is the index
// against HEAD. Else a diff-index against oldSHA asks for the index's
// side (it was asked always: a process per landing, issue 25 §1).
func (c *Client) localChanges(ctx context.Context, dir, oldSHA string, scope ...string) ([]string, error) {
	head, entries, err := c.statusV2(ctx, dir, scope...)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, e := range entries {
		if e.y != '.' || (head == oldSHA && e.x != '.') {
			paths = append(paths, e.path)
		}
	}
	if head != oldSHA {
		out, err := c.run(ctx, dir, nil, nil, append([]string{"--literal-pathspecs", "diff-index", "--cached", "--name-only", "-z", "--no-renames", "--end-of-options", oldSHA, "--"}, scope...)...)
		if err != nil {
			return nil, err
		}
		paths = append(paths, splitNUL(out)...)
	}
	slices.Sort(paths)
	return slices.Compact(paths), nil
}

// statusV2 is git status --porcelain=v2 of the checkout dir (limited to
// paths when given): the commit HEAD named as status ran ("" on an unborn
// branch), and an entry per changed, unmerged or untracked path, its x
// (index against HEAD) and y (working tree against index) as v2 writes
// them: '.' for unchanged, '?' for untracked. --no-ahead-behind: the
// header must not walk the history to an upstream.
func (c *Client) statusV2(ctx context.Context, dir string, paths ...string) (string, []statusEntry, error) {
	args := []string{"--no-optional-locks", "--literal-pathspecs", "status", "--porcelain=v2", "--branch", "--no-ahead-behind", "-z", "--untracked-files=all", "--no-renames"}
	if len(paths) > 0 {
		args = append(append(args, "--"), paths...)
	}
	out, err := c.run(ctx, dir, nil, nil, args...)
	if err != nil {
		return "", nil, err
	}
	fields := strings.Split(string(out), "\x00")
	var head string
	var entries []statusEntry
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if oid, ok := strings.CutPrefix(f, "# branch.oid "); ok {
			if oid != "(initial)" {
				head = oid
			}
			continue
		}
		// The fields before the path: ordinary 8, renamed 9 (its
		// original path follows), unmerged 10, untracked and ignored 1.
		n := map[string]int{"1": 8, "2": 9, "u": 10, "?": 1}[strings.SplitN(f, " ", 2)[0]]
		parts := strings.SplitN(f, " ", n+1)
		if n == 0 || len(parts) != n+1 {
			continue // a header, an ignored file, or the empty tail
		}
		e := statusEntry{x: '?', y: '?', path: parts[n]}
		if n > 1 && len(parts[1]) == 2 {
			e.x, e.y = parts[1][0], parts[1][1]
		}
		entries = append(entries, e)
		if parts[0] == "2" && i+1 < len(fields) {
			i++ // the original path of a rename or copy
			entries = append(entries, statusEntry{x: e.x, y: e.y, path: fields[i]})
		}
	}
	return head, entries, nil
}

// maxPathspecs bounds the paths passed on one git command line; past it a
// whole-tree status is cheaper than risking the argument limit.
const maxPathspecs = 2000

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
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
	if err := c.advanceCheckout(ctx, dir, oldSHA, newSHA, skip, nil, nil); err != nil {
		return fmt.Errorf("advance checkout %s %s..%s: %w", c.abs(dir), short(oldSHA), short(newSHA), err)
	}
	return nil
}

// env is added to every git command that reads or writes the index (a
// GIT_INDEX_FILE, under IndexLock).
// d, when it is the difference of oldSHA and newSHA, is used instead of
// reading it again.
func (c *Client) advanceCheckout(ctx context.Context, dir, oldSHA, newSHA string, skip, env []string, d *TreeDiff) error {
	// The raw format: each changed path with its new mode and blob, so
	// the skip files' index entries need no ls-tree of their own.
	if d == nil || d.old != oldSHA || d.new != newSHA {
		var err error
		if d, err = c.treeDiff(ctx, oldSHA, newSHA); err != nil {
			return err
		}
	}
	fields := d.fields
	skipSet := make(map[string]bool, len(skip))
	for _, p := range skip {
		skipSet[p] = true
	}
	var upd, del []string
	var own [][3]string     // mode, blob, path; mode "" for a deletion
	var null, status string // the repository's null object id, as the diff writes it
	for i := 0; i+1 < len(fields); i += 2 {
		// ":<old mode> <new mode> <old blob> <new blob> <status>"
		meta, p := strings.Fields(strings.TrimPrefix(fields[i], ":")), fields[i+1]
		if len(meta) != 5 {
			return fmt.Errorf("diff-tree: unexpected %q", fields[i])
		}
		status, null = meta[4], strings.Repeat("0", len(meta[2]))
		switch {
		case skipSet[p]:
			e := [3]string{meta[1], meta[3], p}
			if status == "D" {
				e[0] = ""
			}
			own = append(own, e)
		case status == "D":
			del = append(del, p)
		default:
			upd = append(upd, p)
		}
	}
	// New paths are written before old ones are removed, so a file
	// renamed in the merge (a phase doc becoming DONE_<doc>) is never
	// missing from the folder: the driver re-validates the roadmap against
	// that folder at any moment. Only a deletion that makes room for an
	// update (a file replaced by a folder, or the reverse) goes first.
	first, later := splitInTheWay(del, upd)
	if err := c.removePaths(ctx, dir, first, env); err != nil {
		return err
	}
	if len(upd) > 0 {
		if _, err := c.run(ctx, dir, nulList(upd), env, "--literal-pathspecs", "checkout", newSHA, "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
			return err
		}
	}
	return c.settleIndex(ctx, dir, null, later, own, env)
}

// settleIndex drops the index entries of the deletions left for last and
// sets those of the paths the caller owns (mode "" : removed) in one `git
// update-index --index-info` (an `rm --cached` and an update-index per
// owned path before: two processes or more per landing, issue 25 §1),
// then removes the deleted files from disk. null is the repository's null
// object id (the mode-0 line that removes an entry carries one).
func (c *Client) settleIndex(ctx context.Context, dir, null string, del []string, own [][3]string, env []string) error {
	if len(del) == 0 && len(own) == 0 {
		return nil
	}
	var in strings.Builder
	for _, p := range del {
		in.WriteString("0 " + null + "\t" + p + "\x00")
	}
	for _, e := range own {
		mode, blob, p := e[0], e[1], e[2]
		if mode == "" {
			mode, blob = "0", null
		}
		in.WriteString(mode + " " + blob + "\t" + p + "\x00")
	}
	if _, err := c.run(ctx, dir, []byte(in.String()), env, "update-index", "-z", "--index-info"); err != nil {
		return err
	}
	return c.removeFiles(dir, del)
}

// splitInTheWay splits deletions into those an update needs out of its
// way (one path is a folder holding the other) and the rest.
func splitInTheWay(del, upd []string) (first, later []string) {
	dirs := make(map[string]bool)
	for _, u := range upd {
		for _, a := range ancestors(u) {
			dirs[a] = true
		}
	}
	updSet := make(map[string]bool, len(upd))
	for _, u := range upd {
		updSet[u] = true
	}
	for _, d := range del {
		inWay := dirs[d]
		for _, a := range ancestors(d) {
			inWay = inWay || updSet[a]
		}
		if inWay {
			first = append(first, d)
		} else {
			later = append(later, d)
		}
	}
	return first, later
}

// removePaths removes paths from the index and the disk, and the folders
// that this empties, as git would.
func (c *Client) removePaths(ctx context.Context, dir string, del, env []string) error {
	if len(del) == 0 {
		return nil
	}
	if _, err := c.run(ctx, dir, nulList(del), env, "--literal-pathspecs", "rm", "-q", "--cached", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
		return err
	}
	return c.removeFiles(dir, del)
}

// removeFiles removes the files del (repository-relative) from the
// checkout dir, and the folders they leave empty.
func (c *Client) removeFiles(dir string, del []string) error {
	top := c.abs(dir)
	for _, p := range del {
		full := filepath.Join(top, filepath.FromSlash(p))
		if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for d := filepath.Dir(full); d != top && strings.HasPrefix(d, top); d = filepath.Dir(d) {
			if os.Remove(d) != nil {
				break
			}
		}
	}
	return nil
}

func nulList(paths []string) []byte {
	return []byte(strings.Join(paths, "\x00") + "\x00")
}
