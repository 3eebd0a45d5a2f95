package ghfake

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/atomicfile"
	"github.com/claudopilot/claudopilot/worktree"
)

// What GitHub's own git writes into the origin (a merge's commit, a
// branch moved by a merge or an update, a person's commit made on the
// web) the fake writes in Go, as git's files: loose objects (zlib of
// "<kind> <size>\0<body>", named by their SHA-1) and loose refs moved
// under git's lock (<ref>.lock made exclusively, the old value checked
// under it, the new one written whole). git reads them as it
// reads what receive-pack writes. A commit-tree and an update-ref were two
// git processes per merge, a web commit six (hash-object, read-tree,
// update-index, write-tree, commit-tree, update-ref): a test's cost is its
// processes (BENCHMARKS.md §5, session 13). An origin whose config names
// an extension (another object format, another ref storage) is left to
// git, as before.

// errRefMoved is a ref not at the value a move expected.
var errRefMoved = errors.New("the ref moved")

// plainFiles reports whether the origin keeps SHA-1 objects and refs in
// files (no extension in its config): what the fake writes itself.
func plainFiles(origin string) bool {
	b, err := os.ReadFile(filepath.Join(origin, "config"))
	if err != nil {
		return false
	}
	return !bytes.Contains(bytes.ToLower(b), []byte("[extensions]"))
}

// writeObject writes a loose object of kind with body into the origin and
// returns its id; one already there is kept.
func (s *Server) writeObject(kind string, body []byte) (string, error) {
	h := sha1.New()
	fmt.Fprintf(h, "%s %d\x00", kind, len(body))
	h.Write(body)
	id := hex.EncodeToString(h.Sum(nil))
	dir := filepath.Join(s.opt.Origin, "objects", id[:2])
	dst := filepath.Join(dir, id[2:])
	if _, err := os.Stat(dst); err == nil {
		return id, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	fmt.Fprintf(zw, "%s %d\x00", kind, len(body))
	_, werr := zw.Write(body)
	if err := errors.Join(werr, zw.Close()); err != nil {
		return "", err
	}
	return id, atomicfile.Write(dst, z.Bytes(), 0o444, atomicfile.NoSync())
}

// readObject reads object id's body from its loose file, or (packed) from
// git cat-file, checking its kind.
func (s *Server) readObject(ctx context.Context, kind, id string) ([]byte, error) {
	body, err := s.looseObject(kind, id)
	if errors.Is(err, errNotLoose) {
		cmd := exec.CommandContext(ctx, "git", "-C", s.opt.Origin, "cat-file", kind, "--end-of-options", id)
		cmd.Env = s.git.Env
		return cmd.Output() // raw: a tree's last id byte may be a line break
	}
	return body, err
}

// commitObject writes the commit of tree with parents and msg (a line
// break added if missing, as commit-tree adds it) by GitHub, now.
func (s *Server) commitObject(ctx context.Context, tree string, parents []string, msg string) (string, error) {
	return s.commitAs(ctx, "GitHub <noreply@github.com>", tree, parents, msg)
}

// commitAs is commitObject by who ("Name <email>").
func (s *Server) commitAs(ctx context.Context, who, tree string, parents []string, msg string) (string, error) {
	if !s.files {
		return s.git.CommitTree(ctx, tree, parents, msg)
	}
	if msg != "" && !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	now := time.Now()
	_, off := now.Zone()
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	date := fmt.Sprintf("%d %c%02d%02d", now.Unix(), sign, off/3600, off/60%60)
	var b strings.Builder
	b.WriteString("tree " + tree + "\n")
	for _, p := range parents {
		b.WriteString("parent " + p + "\n")
	}
	b.WriteString("author " + who + " " + date + "\ncommitter " + who + " " + date + "\n\n" + msg)
	return s.writeObject("commit", []byte(b.String()))
}

// moveRef moves ref (refs/heads/…) to id if it is at old now ("": absent),
// as update-ref <ref> <id> <old> does; errRefMoved (wrapped) otherwise.
// The lock is waited for up to 100 ms, as git's core.filesRefLockTimeout.
func (s *Server) moveRef(ctx context.Context, ref, id, old string) error {
	if !s.files {
		if old == "" {
			old = strings.Repeat("0", 40)
		}
		return s.git.UpdateRef(ctx, ref, id, old)
	}
	p := filepath.Join(s.opt.Origin, filepath.FromSlash(ref))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	for end := time.Now().Add(100 * time.Millisecond); ; {
		f, err := os.OpenFile(p+".lock", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			f.Close()
			break
		}
		if !errors.Is(err, os.ErrExist) || time.Now().After(end) {
			return fmt.Errorf("lock %s: %w", ref, err)
		}
		time.Sleep(time.Millisecond)
	}
	// Under the lock no git moves the ref; the new value goes in whole
	// (atomicfile), and the lock goes after it.
	defer os.Remove(p + ".lock")
	cur, err := s.refValue(ref)
	if err != nil {
		return err
	}
	if cur != old {
		return fmt.Errorf("move %s from %s: it is at %q: %w", ref, old, cur, errRefMoved)
	}
	return atomicfile.Write(p, []byte(id+"\n"), 0o644, atomicfile.NoSync())
}

// refValue is ref's id in the origin's files: its loose file, else its
// line in packed-refs, else "" (absent).
func (s *Server) refValue(ref string) (string, error) {
	b, err := os.ReadFile(filepath.Join(s.opt.Origin, filepath.FromSlash(ref)))
	if err == nil {
		v := strings.TrimSpace(string(b))
		if strings.HasPrefix(v, "ref:") {
			return "", fmt.Errorf("%s is a symbolic ref", ref)
		}
		return v, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	packed, err := os.ReadFile(filepath.Join(s.opt.Origin, "packed-refs"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(packed), "\n") {
		if id, name, ok := strings.Cut(l, " "); ok && name == ref && len(id) == 40 {
			return id, nil
		}
	}
	return "", nil
}

// treeEntry is one entry of a tree object.
type treeEntry struct {
	mode, name string
	id         []byte // raw, 20 bytes
}

// withFile is tree (its id; "" for none) with the file at slash-separated
// p holding the blob id (mode 100644), written with the trees above it.
func (s *Server) withFile(ctx context.Context, tree, p, blob string) (string, error) {
	first, rest, nested := strings.Cut(p, "/")
	if first == "" || first == "." || first == ".." || first == ".git" {
		return "", fmt.Errorf("bad path %q", p)
	}
	var entries []treeEntry
	if tree != "" {
		body, err := s.readObject(ctx, "tree", tree)
		if err != nil {
			return "", err
		}
		if entries, err = parseTree(body); err != nil {
			return "", fmt.Errorf("tree %s: %w", tree, err)
		}
	}
	entry := treeEntry{mode: "100644", name: first}
	i := slices.IndexFunc(entries, func(e treeEntry) bool { return e.name == first })
	found := i >= 0
	id := blob
	if nested {
		sub := ""
		if found {
			if entries[i].mode != "40000" {
				return "", fmt.Errorf("%s is not a folder", first)
			}
			sub = hex.EncodeToString(entries[i].id)
		}
		var err error
		if id, err = s.withFile(ctx, sub, rest, blob); err != nil {
			return "", err
		}
		entry.mode = "40000"
	} else if found && entries[i].mode == "40000" {
		return "", fmt.Errorf("%s is a folder", first)
	}
	raw, err := hex.DecodeString(id)
	if err != nil {
		return "", err
	}
	entry.id = raw
	if found {
		entries[i] = entry
	} else {
		entries = append(entries, entry)
	}
	// git's order: a folder sorts as its name with a slash after it.
	key := func(e treeEntry) string {
		if e.mode == "40000" {
			return e.name + "/"
		}
		return e.name
	}
	sort.Slice(entries, func(a, b int) bool { return key(entries[a]) < key(entries[b]) })
	var b bytes.Buffer
	for _, e := range entries {
		b.WriteString(e.mode + " " + e.name + "\x00")
		b.Write(e.id)
	}
	return s.writeObject("tree", b.Bytes())
}

// treeWith is tree with the file at p holding body: written by the fake,
// or by git (ReplaceFiles) in an origin it leaves to git.
func (s *Server) treeWith(ctx context.Context, tree, p, body string) (string, error) {
	if !s.files {
		return s.git.ReplaceFiles(ctx, tree, map[string][]byte{p: []byte(body)}, nil)
	}
	blob, err := s.writeObject("blob", []byte(body))
	if err != nil {
		return "", err
	}
	return s.withFile(ctx, tree, p, blob)
}

// parseTree splits a tree object's body into its entries.
func parseTree(b []byte) ([]treeEntry, error) {
	var out []treeEntry
	for len(b) > 0 {
		sp := bytes.IndexByte(b, ' ')
		nul := bytes.IndexByte(b, 0)
		if sp < 0 || nul < sp || len(b) < nul+21 {
			return nil, errors.New("malformed tree")
		}
		out = append(out, treeEntry{mode: string(b[:sp]), name: string(b[sp+1 : nul]), id: b[nul+1 : nul+21]})
		b = b[nul+21:]
	}
	return out, nil
}

// Commit commits the file at path (slash-separated) holding body on the
// origin's branch, on its tip (a new branch on base's), by who ("Name
// <email>"), as a person's commit made on GitHub's web editor or pushed:
// the blob, trees and commit written by the fake, the branch moved only
// from the tip read (a new one only while still missing). It returns the
// commit's id.
func (s *Server) Commit(branch, base, path, body, msg, who string) (string, error) {
	ctx := context.Background()
	ref := "refs/heads/" + branch
	old, _ := s.tip(ctx, branch)
	parent := old
	if parent == "" {
		var err error
		if parent, err = s.tip(ctx, base); err != nil {
			return "", fmt.Errorf("the base %s: %w", base, err)
		}
	}
	tree, _, err := s.commitOf(ctx, parent)
	if err != nil {
		return "", err
	}
	if tree, err = s.treeWith(ctx, tree, path, body); err != nil {
		return "", err
	}
	sha, err := s.commitAs(ctx, who, tree, []string{parent}, msg)
	if err != nil {
		return "", err
	}
	return sha, s.moveRef(ctx, ref, sha, old)
}

// The fake's reads of the origin (a branch's tip, a commit's tree and
// parents, a path in a branch) come from git's files too, as git's
// long-lived cat-file answered them: a loose ref or packed-refs' line, a
// loose object. That cat-file was a git process per test. What the files
// do not answer (an object packed, a name that is not a plain branch, an
// origin left to git) is asked of that cat-file, started then.

// errNotLoose is an object with no loose file (packed, or missing).
var errNotLoose = errors.New("not a loose object")

// looseObject is readObject from the loose file only: errNotLoose when
// there is none (or the origin is left to git).
func (s *Server) looseObject(kind, id string) ([]byte, error) {
	if !s.files || !isID(id) {
		return nil, errNotLoose
	}
	f, err := os.Open(filepath.Join(s.opt.Origin, "objects", id[:2], id[2:]))
	if errors.Is(err, os.ErrNotExist) {
		return nil, errNotLoose
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := zlib.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", id, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", id, err)
	}
	hdr, body, ok := bytes.Cut(b, []byte{0})
	if !ok || string(hdr) != fmt.Sprintf("%s %d", kind, len(body)) {
		return nil, fmt.Errorf("object %s: not a %s", id, kind)
	}
	return body, nil
}

// isID reports whether id is a full SHA-1 in lower-case hex.
func isID(id string) bool {
	if len(id) != 40 {
		return false
	}
	for _, c := range id {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// plainBranch reports whether b is a branch name whose ref file is
// refs/heads/<b> beneath the origin: slash-separated parts, none empty,
// none starting with a dot or ending with .lock, no byte git refuses in a
// ref name. Anything else is left to git.
func plainBranch(b string) bool {
	if b == "" || strings.ContainsAny(b, "\\:?*[~^ \t\x7f@{") {
		return false
	}
	for _, part := range strings.Split(b, "/") {
		if part == "" || part[0] == '.' || strings.HasSuffix(part, ".lock") {
			return false
		}
		for _, c := range part {
			if c < ' ' {
				return false
			}
		}
	}
	return true
}

// tip is branch b's commit: its ref read from the origin's files, else
// asked of git; worktree.ErrNoRev (wrapped) when there is no such branch.
func (s *Server) tip(ctx context.Context, b string) (string, error) {
	if !s.files || !plainBranch(b) {
		return s.git.RevParse(ctx, "refs/heads/"+b)
	}
	id, err := s.refValue("refs/heads/" + b)
	switch {
	case err != nil:
		return "", err
	case id == "":
		return "", fmt.Errorf("refs/heads/%s: %w", b, worktree.ErrNoRev)
	case !isID(id):
		return s.git.RevParse(ctx, "refs/heads/"+b)
	}
	return id, nil
}

// commitOf is commit id's tree and parents (first parent first): from
// its loose object, else asked of git (<id>^{tree}, then <id>^1, ^2, …
// until one does not resolve, as before).
func (s *Server) commitOf(ctx context.Context, id string) (tree string, parents []string, err error) {
	body, err := s.looseObject("commit", id)
	if errors.Is(err, errNotLoose) {
		if tree, err = s.git.RevParse(ctx, id+"^{tree}"); err != nil {
			return "", nil, err
		}
		for i := 1; ; i++ {
			p, err := s.git.RevParse(ctx, fmt.Sprintf("%s^%d", id, i))
			if errors.Is(err, worktree.ErrNoRev) {
				return tree, parents, nil
			}
			if err != nil {
				return "", nil, err
			}
			parents = append(parents, p)
		}
	}
	if err != nil {
		return "", nil, err
	}
	for _, l := range strings.Split(string(body), "\n") {
		if l == "" {
			break // the headers end
		}
		if v, ok := strings.CutPrefix(l, "tree "); ok {
			tree = v
		} else if v, ok := strings.CutPrefix(l, "parent "); ok {
			parents = append(parents, v)
		}
	}
	if !isID(tree) {
		return "", nil, fmt.Errorf("commit %s: no tree", id)
	}
	return tree, parents, nil
}

// hasPath reports whether branch's (or a commit id's) tree has path:
// walked through loose trees, else asked of git (<branch>:<path>).
func (s *Server) hasPath(ctx context.Context, branch, p string) bool {
	ask := func() bool {
		_, err := s.git.RevParse(ctx, branch+":"+p)
		return err == nil
	}
	id := branch // a commit's id, as git takes 40 hex digits
	if !isID(id) {
		if !s.files || !plainBranch(branch) {
			return ask()
		}
		var err error
		if id, err = s.tip(ctx, branch); err != nil {
			return false
		}
	}
	tree, _, err := s.commitOf(ctx, id)
	if err != nil {
		return ask()
	}
	names := strings.Split(strings.Trim(p, "/"), "/")
	for k, name := range names {
		body, err := s.looseObject("tree", tree)
		if err != nil {
			return ask()
		}
		es, err := parseTree(body)
		if err != nil {
			return ask()
		}
		i := slices.IndexFunc(es, func(e treeEntry) bool { return e.name == name })
		if i < 0 || k < len(names)-1 && es[i].mode != "40000" {
			return false // (a file is no folder)
		}
		tree = hex.EncodeToString(es[i].id)
	}
	return true
}
