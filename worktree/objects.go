package worktree

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/claudopilot/claudopilot/internal/tempdir"
)

// zeroOID is used with update-index --index-info mode 0 (remove an entry);
// git ignores the object id of such a line.
const zeroOID = "0000000000000000000000000000000000000000"

// CommitAll stages everything in the worktree dir (git add -A) and commits it
// with message msg if anything is staged. It reports whether it committed.
// No hook runs (no git the driver runs does: see hardened). Identity
// comes from Env/config.
func (c *Client) CommitAll(ctx context.Context, dir, msg string) (bool, error) {
	if _, err := c.run(ctx, dir, nil, nil, "add", "-A"); err != nil {
		return false, fmt.Errorf("commit all %s: %w", c.abs(dir), err)
	}
	_, err := c.run(ctx, dir, nil, nil, "diff", "--cached", "--quiet")
	switch {
	case err == nil:
		return false, nil
	case exitCode(err) != 1:
		return false, fmt.Errorf("commit all %s: %w", c.abs(dir), err)
	}
	// -F - keeps long messages out of argv and error texts.
	if _, err := c.run(ctx, dir, []byte(msg), nil, "commit", "-q", "-F", "-"); err != nil {
		return false, fmt.Errorf("commit all %s: %w", c.abs(dir), err)
	}
	return true, nil
}

// Dirty returns the sorted paths (relative to the worktree top) with
// uncommitted changes in worktree dir: modified, staged, deleted, unmerged
// and untracked files (each file of an untracked directory; ignored files
// are not listed), relative to HEAD. A rename lists both paths. It reads
// `git status --porcelain=v1 -z -uall --no-renames` without taking optional
// locks, so it does not disturb an agent working in dir.
func (c *Client) Dirty(ctx context.Context, dir string) ([]string, error) {
	entries, err := c.status(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("dirty %s: %w", c.abs(dir), err)
	}
	paths := make([]string, 0, len(entries))
	for _, e := range entries {
		paths = append(paths, e.path)
	}
	slices.Sort(paths)
	return slices.Compact(paths), nil
}

// Change is one path of `git status`: X is the index-vs-HEAD state, Y the
// worktree-vs-index state ('?' for untracked), as in --porcelain=v1.
type Change struct {
	X, Y byte
	Path string
}

// Status lists the uncommitted changes of worktree dir as Dirty does (each
// file of an untracked directory, ignored files left out, no rename
// detection), with their states. It takes no optional locks.
func (c *Client) Status(ctx context.Context, dir string) ([]Change, error) {
	entries, err := c.status(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("status %s: %w", c.abs(dir), err)
	}
	out := make([]Change, 0, len(entries))
	for _, e := range entries {
		out = append(out, Change{X: e.x, Y: e.y, Path: e.path})
	}
	return out, nil
}

// statusEntry is one path of `git status --porcelain=v1`: x is the
// index-vs-HEAD state, y the worktree-vs-index state ('?' for untracked).
type statusEntry struct {
	x, y byte
	path string
}

func (c *Client) status(ctx context.Context, dir string, paths ...string) ([]statusEntry, error) {
	args := []string{"--no-optional-locks", "--literal-pathspecs", "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"}
	if len(paths) > 0 {
		args = append(append(args, "--"), paths...)
	}
	out, err := c.run(ctx, dir, nil, nil, args...)
	if err != nil {
		return nil, err
	}
	fields := strings.Split(string(out), "\x00")
	var entries []statusEntry
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		e := statusEntry{x: f[0], y: f[1], path: f[3:]}
		entries = append(entries, e)
		if strings.ContainsAny(f[:2], "RC") && i+1 < len(fields) {
			i++ // the original path of a rename/copy follows
			if fields[i] != "" {
				entries = append(entries, statusEntry{x: e.x, y: e.y, path: fields[i]})
			}
		}
	}
	return entries, nil
}

// MergeTree merges commits base and head without touching any worktree or
// index (git merge-tree --write-tree --name-only --no-messages -z). It
// returns the resulting tree; on conflicts the tree contains conflict
// markers, conflicts lists the conflicted paths (sorted) and err is nil. A
// clean merge has conflicts == nil.
func (c *Client) MergeTree(ctx context.Context, base, head string) (tree string, conflicts []string, err error) {
	out, err := c.run(ctx, "", nil, nil, "merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", "--end-of-options", base, head)
	code := 0
	if err != nil {
		code = exitCode(err)
	}
	if code != 0 && code != 1 {
		return "", nil, fmt.Errorf("merge-tree %s %s: %w", base, head, err)
	}
	fields := splitNUL(out)
	if len(fields) == 0 {
		return "", nil, fmt.Errorf("merge-tree %s %s: no tree in output", base, head)
	}
	tree = fields[0]
	if code == 0 {
		return tree, nil, nil
	}
	conflicts = fields[1:]
	if len(conflicts) == 0 {
		return "", nil, fmt.Errorf("merge-tree %s %s: conflict reported without paths: %w", base, head, err)
	}
	slices.Sort(conflicts)
	return tree, slices.Compact(conflicts), nil
}

// CommitTree creates a commit object for tree with the given parents (in
// order: first parent first) and message, and returns its id. No ref moves.
// A trailing newline is added to msg if missing, as git commit does.
func (c *Client) CommitTree(ctx context.Context, tree string, parents []string, msg string) (string, error) {
	args := []string{"commit-tree"}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	args = append(args, "-F", "-", tree)
	if msg != "" && !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	out, err := c.run(ctx, "", []byte(msg), nil, args...)
	if err != nil {
		return "", fmt.Errorf("commit-tree %s: %w", tree, err)
	}
	return trimNL(out), nil
}

// lsEntry is one line of ls-tree output.
type lsEntry struct {
	mode, typ, oid string
}

// lsTree returns the entries of tree-ish for exactly the given paths
// (git ls-tree -t --full-tree -z), including tree entries. Absent paths are
// absent from the map.
func (c *Client) lsTree(ctx context.Context, dir, treeish string, paths []string) (map[string]lsEntry, error) {
	m := map[string]lsEntry{}
	if len(paths) == 0 {
		return m, nil
	}
	args := append([]string{"ls-tree", "-t", "--full-tree", "-z", "--end-of-options", treeish, "--"}, paths...)
	out, err := c.run(ctx, dir, nil, nil, args...)
	if err != nil {
		return nil, err
	}
	for _, f := range splitNUL(out) {
		meta, p, ok := strings.Cut(f, "\t")
		fs := strings.Fields(meta)
		if !ok || len(fs) != 3 {
			return nil, fmt.Errorf("ls-tree: unexpected line %q", f)
		}
		m[p] = lsEntry{mode: fs[0], typ: fs[1], oid: fs[2]}
	}
	return m, nil
}

// checkRelPath rejects paths that are not clean, relative, slash-separated
// paths inside the repository, or that git refuses to track (a ".git"
// component; update-index --index-info would silently skip those).
func checkRelPath(p string) error {
	if p == "" || path.IsAbs(p) || filepath.IsAbs(p) || path.Clean(p) != p || strings.ContainsRune(p, 0) {
		return fmt.Errorf("invalid repository path %q", p)
	}
	for elem := range strings.SplitSeq(p, "/") {
		if elem == "." || elem == ".." || strings.EqualFold(elem, ".git") {
			return fmt.Errorf("invalid repository path %q", p)
		}
	}
	return nil
}

// ancestors returns the parent directories of p ("a/b/c" → "a", "a/b").
func ancestors(p string) []string {
	var out []string
	for i := range len(p) {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return out
}

// ReplaceFiles returns a new tree: tree (any tree-ish) with each path in
// files set to the given content and each path in remove deleted. Paths are
// relative to the repository top, slash-separated. A replaced file keeps its
// mode (100644, 100755 or 120000); a new file gets 100644, with its parent
// directories created. Content is stored as given (no filters). Removing an
// absent path is a no-op. It is an error to write a path that is a directory
// or submodule in tree, or below a file, to remove a directory, or to name a
// path in both files and remove.
//
// It works in a private temporary index (GIT_INDEX_FILE in a folder of
// TMPDIR that a killed driver's successor reclaims, internal/tempdir:
// read-tree, hash-object -w, update-index --index-info, write-tree), so it
// never touches a worktree's index and is safe to run concurrently with
// anything else.
func (c *Client) ReplaceFiles(ctx context.Context, tree string, files map[string][]byte, remove []string) (string, error) {
	newTree, err := c.replaceFiles(ctx, tree, files, remove)
	if err != nil {
		return "", fmt.Errorf("replace files in %s: %w", tree, err)
	}
	return newTree, nil
}

func (c *Client) replaceFiles(ctx context.Context, tree string, files map[string][]byte, remove []string) (string, error) {
	writes, err := checkChanges(files, remove)
	if err != nil {
		return "", err
	}
	info, err := c.indexInfo(ctx, tree, files, writes, remove)
	if err != nil {
		return "", err
	}
	// A killed driver's is removed by the next one made (os.MkdirTemp's
	// stayed in TMPDIR for good).
	tmp, release, err := tempdir.Dir("", "claudopilot-index-")
	if err != nil {
		return "", err
	}
	defer release()
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	if _, err := c.run(ctx, "", nil, env, "read-tree", "--end-of-options", tree); err != nil {
		return "", err
	}
	if info != "" {
		if _, err := c.run(ctx, "", []byte(info), env, "update-index", "-z", "--index-info"); err != nil {
			return "", err
		}
	}
	out, err := c.run(ctx, "", nil, env, "write-tree")
	if err != nil {
		return "", err
	}
	return trimNL(out), nil
}

// checkChanges checks every path written or removed (relative, inside the
// tree, none both) and returns the written ones sorted.
func checkChanges(files map[string][]byte, remove []string) ([]string, error) {
	writes := make([]string, 0, len(files))
	for p := range files {
		if err := checkRelPath(p); err != nil {
			return nil, err
		}
		writes = append(writes, p)
	}
	slices.Sort(writes)
	for _, p := range remove {
		if err := checkRelPath(p); err != nil {
			return nil, err
		}
		if _, ok := files[p]; ok {
			return nil, fmt.Errorf("path %q is both written and removed", p)
		}
	}
	return writes, nil
}

// indexInfo writes the blobs of files and returns update-index
// --index-info's input (-z) for the writes and removals on tree. A write
// keeps an existing file's mode; one where a folder (or a folder's place
// is a file) is, and a removal of a folder, are refused.
func (c *Client) indexInfo(ctx context.Context, tree string, files map[string][]byte, writes, remove []string) (string, error) {
	// Look up every written/removed path and every ancestor of a written path.
	query := slices.Clone(remove)
	for _, p := range writes {
		query = append(query, p)
		query = append(query, ancestors(p)...)
	}
	slices.Sort(query)
	query = slices.Compact(query)
	existing, err := c.lsTree(ctx, "", tree, query)
	if err != nil {
		return "", err
	}
	var info strings.Builder
	for _, p := range writes {
		for _, a := range ancestors(p) {
			if e, ok := existing[a]; ok && e.typ != "tree" {
				return "", fmt.Errorf("cannot write %q: %q is not a directory", p, a)
			}
			if _, ok := files[a]; ok {
				return "", fmt.Errorf("cannot write both %q and %q", a, p)
			}
		}
		mode := "100644"
		if e, ok := existing[p]; ok {
			if e.typ != "blob" {
				return "", fmt.Errorf("cannot write %q: it is a %s", p, e.typ)
			}
			mode = e.mode
		}
		oid, err := c.run(ctx, "", files[p], nil, "hash-object", "-w", "--no-filters", "--stdin")
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&info, "%s %s\t%s\x00", mode, trimNL(oid), p)
	}
	for _, p := range remove {
		e, ok := existing[p]
		if !ok {
			continue
		}
		if e.typ == "tree" {
			return "", fmt.Errorf("cannot remove %q: it is a directory", p)
		}
		fmt.Fprintf(&info, "0 %s\t%s\x00", zeroOID, p)
	}
	return info.String(), nil
}

// ReadFile returns the raw blob at path in rev (git cat-file blob rev:path;
// no filters). ok is false when rev has no such path. It returns an error
// wrapping ErrNoRev when rev itself does not resolve, and an error when path
// names something other than a file.
func (c *Client) ReadFile(ctx context.Context, rev, p string) ([]byte, bool, error) {
	fs, err := c.ReadFiles(ctx, rev, p)
	if err != nil {
		return nil, false, err
	}
	return fs[0].Data, fs[0].OK, fs[0].Err
}

// Blob is one answer of ReadFiles: OK is false when the path is missing;
// Err says when it names something other than a file.
type Blob struct {
	Data []byte
	OK   bool
	Err  error
}

// ReadFiles is ReadFile for several paths of one rev in one git process,
// the answers in the order of paths: the done check asks for the DONE_
// doc and the doc at once.
func (c *Client) ReadFiles(ctx context.Context, rev string, paths ...string) ([]Blob, error) {
	// One round answers all the questions: does rev name a tree, what is
	// at each path, and its content (a missing phase doc is a common
	// answer, and used to take three calls).
	specs := []string{rev + "^{tree}"}
	for _, p := range paths {
		specs = append(specs, rev+":"+p)
	}
	objs, err := c.readBatch(ctx, specs...)
	if err != nil {
		return nil, fmt.Errorf("read %s:%s: %w", rev, strings.Join(paths, ","), err)
	}
	if objs[0].missing {
		return nil, fmt.Errorf("read %s:%s: rev-parse %q: %w", rev, strings.Join(paths, ","), rev, ErrNoRev)
	}
	blobs := make([]Blob, len(paths))
	for i, o := range objs[1:] {
		switch {
		case o.missing:
		case o.kind != "blob":
			blobs[i].Err = fmt.Errorf("read %s: a %s, not a file", specs[i+1], o.kind)
		default:
			blobs[i] = Blob{Data: o.data, OK: true}
		}
	}
	return blobs, nil
}

// ReplaceFile returns tree (any tree-ish) with the file at p, which must
// already be there, holding content instead; its mode stays. It is
// ReplaceFiles for the one case a landing needs (the manifest flip written
// into the merge tree) without a temporary index: the long-lived cat-file
// reads the trees on p's path, the blob and the changed trees are computed
// here and written by one `git unpack-objects` from a pack made here
// (issue 25 §1: a hash-object and a mktree --batch before). Anything else
// (a new file, a path that is not a plain file) goes through ReplaceFiles.
func (c *Client) ReplaceFile(ctx context.Context, tree, p string, content []byte) (string, error) {
	oid, pack, hashLen, err := c.flipPack(ctx, tree, p, content)
	if err != nil || pack == nil {
		return oid, err
	}
	if err := c.unpack(ctx, pack, hashLen, [2]string{oid, "tree"}); err != nil {
		return "", fmt.Errorf("replace %s in %s: %w", p, tree, err)
	}
	return oid, nil
}

// flipPack computes ReplaceFile's new blob and trees: the new root tree's
// id and the objects to write, or (pack nil) the root tree ReplaceFiles
// wrote the slow way.
func (c *Client) flipPack(ctx context.Context, tree, p string, content []byte) (string, []packObject, int, error) {
	if err := checkRelPath(p); err != nil {
		return "", nil, 0, err
	}
	slow := func() (string, []packObject, int, error) {
		oid, err := c.ReplaceFiles(ctx, tree, map[string][]byte{p: content}, nil)
		return oid, nil, 0, err
	}
	dirs := append([]string{""}, ancestors(p)...)
	specs := make([]string, len(dirs))
	for i, d := range dirs {
		specs[i] = tree + ":" + d
	}
	objs, err := c.readBatch(ctx, specs...)
	if err != nil {
		return "", nil, 0, fmt.Errorf("replace %s in %s: %w", p, tree, err)
	}
	raw := make([][]byte, len(dirs))
	for i, o := range objs {
		if o.missing || o.kind != "tree" {
			return slow()
		}
		raw[i] = o.data
	}
	hashLen := len(objs[0].id) / 2
	if hashLen != sha1.Size && hashLen != sha256.Size {
		return slow()
	}
	oid := objectID("blob", content, hashLen)
	pack := []packObject{{kind: packBlob, data: content}}
	// Bottom up: each tree's entry for the next level (or the file) takes
	// the new id; names and modes stay, so the order stays canonical and
	// the new tree's id is computed here for its parent.
	names := append(strings.Split(p, "/"), "")
	for i := len(dirs) - 1; i >= 0; i-- {
		next, body, ok, err := setEntry(raw[i], names[i], oid, i < len(dirs)-1)
		if err != nil {
			return "", nil, 0, fmt.Errorf("replace %s in %s: %w", p, tree, err)
		}
		if !ok {
			return slow()
		}
		oid = next
		pack = append(pack, packObject{kind: packTree, data: body})
	}
	return oid, pack, hashLen, nil
}

// unpack writes pack with one git unpack-objects and checks that each
// object of want (id, kind), computed here, is now in the store as that
// kind: git computed each id from the bytes it was given, and a commit
// must not point at an object that does not exist (fail closed).
func (c *Client) unpack(ctx context.Context, pack []packObject, hashLen int, want ...[2]string) error {
	b, err := writePack(pack, hashLen)
	if err != nil {
		return err
	}
	if _, err := c.run(ctx, "", b, nil, "unpack-objects", "-q"); err != nil {
		return err
	}
	ids := make([]string, len(want))
	for i, w := range want {
		ids[i] = w[0]
	}
	got, err := c.readBatch(ctx, ids...)
	for i, w := range want {
		if err != nil || len(got) != len(want) || got[i].missing || got[i].kind != w[1] {
			return fmt.Errorf("the new %s %s is not in the object store after unpack-objects (%v)", w[1], w[0], err)
		}
	}
	return nil
}

// setEntry gives the entry name of the raw tree the id oid and returns
// the changed tree's id and bytes. Not ok when there is no such entry, or
// it is a file where a folder is meant (dir) or the other way round, or a
// submodule.
func setEntry(raw []byte, name, oid string, dir bool) (string, []byte, bool, error) {
	ents, err := parseTree(raw, len(oid)/2)
	if err != nil {
		return "", nil, false, err
	}
	found := false
	for k := range ents {
		if ents[k].name != name {
			continue
		}
		isTree := ents[k].mode == "40000"
		if isTree != dir || ents[k].mode == "160000" {
			return "", nil, false, nil
		}
		ents[k].oid, found = oid, true
	}
	if !found {
		return "", nil, false, nil
	}
	var body bytes.Buffer
	for _, e := range ents {
		h, err := hexDecode(e.oid)
		if err != nil {
			return "", nil, false, err
		}
		body.WriteString(e.mode + " " + e.name + "\x00")
		body.Write(h)
	}
	return objectID("tree", body.Bytes(), len(oid)/2), body.Bytes(), true, nil
}

type treeEntry struct{ mode, name, oid string }

// parseTree reads a raw tree object (mode SP name NUL id, repeated).
func parseTree(b []byte, hashLen int) ([]treeEntry, error) {
	var ents []treeEntry
	for len(b) > 0 {
		sp := bytes.IndexByte(b, ' ')
		nul := bytes.IndexByte(b, 0)
		if sp < 0 || nul < sp || len(b) < nul+1+hashLen {
			return nil, errors.New("malformed tree object")
		}
		ents = append(ents, treeEntry{mode: string(b[:sp]), name: string(b[sp+1 : nul]), oid: hex.EncodeToString(b[nul+1 : nul+1+hashLen])})
		b = b[nul+1+hashLen:]
	}
	return ents, nil
}

func hexDecode(s string) ([]byte, error) { return hex.DecodeString(s) }

// objectID is git's id of an object: the hash of "<type> <size>\0<body>",
// SHA-1 or SHA-256 by the repository's id length.
func objectID(typ string, body []byte, hashLen int) string {
	hdr := fmt.Sprintf("%s %d\x00", typ, len(body))
	if hashLen == sha256.Size {
		h := sha256.New()
		h.Write([]byte(hdr))
		h.Write(body)
		return hex.EncodeToString(h.Sum(nil))
	}
	h := sha1.New()
	h.Write([]byte(hdr))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}
