package gittest

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/atomicfile"
)

// importLoose makes Import's commits without a process: the blobs, trees
// and commits written as loose objects and the refs as loose ref files
// (with the reflog lines git's ref update adds), the objects byte for
// byte those git fast-import writes for the same input at when (a git
// process costs ~5-13 ms of CPU here, fast-import ~13: it was one per
// Import, ~100 in package land's tests). ok false: a repository or an
// input it does not handle (SHA-256, reftable, an object in a pack, a
// revision other than a mark, a full id or a branch, a move that is not
// a fast-forward, ...); nothing was written and fast-import does the
// work, with its own checks.
func importLoose(env []string, dir string, commits []Commit, when string) (hashes []string, ok bool) {
	if !plainEnv(env) {
		return nil, false
	}
	r, ok := openRepo(dir)
	if !ok {
		return nil, false
	}
	ident := func(who string) string {
		return envGet(env, "GIT_"+who+"_NAME", "t") + " <" + envGet(env, "GIT_"+who+"_EMAIL", "t@x") + "> " + when
	}
	author, committer := ident("AUTHOR"), ident("COMMITTER")
	tips := map[string]string{} // ref → its tip as this import left it
	old := map[string]string{}  // ref → its value before ("" none)
	for _, c := range commits {
		ref := fullRef(c.Ref)
		if _, seen := old[ref]; !seen {
			v, ok := r.ref(ref)
			if !ok {
				return nil, false
			}
			old[ref] = v
		}
		h, ok := r.commit(c, tips[ref], hashes, author, committer)
		if !ok {
			return nil, false
		}
		hashes = append(hashes, h)
		tips[ref] = h
	}
	// fast-import moves a ref only forward: a ref that had a value gets
	// a commit of this import that descends from it (through this
	// import's commits), or the work goes to fast-import, which says so.
	parents := map[string][]string{}
	for _, h := range hashes {
		parents[h] = commitParents(r, h)
	}
	for ref, tip := range tips {
		if o := old[ref]; o != "" && !reaches(parents, tip, o) {
			return nil, false
		}
	}
	for _, ref := range slices.Sorted(maps.Keys(tips)) {
		if !r.setRef(ref, old[ref], tips[ref], committer) {
			return nil, false
		}
	}
	return hashes, true
}

// plainEnv reports whether env leaves git nothing to read that changes
// what importLoose writes: no global or system configuration, no
// configuration in the environment but NoAutoMaintenance's, no other
// repository or object folder.
func plainEnv(env []string) bool {
	global, nosystem := false, false
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "GIT_CONFIG_GLOBAL":
			global = v == "/dev/null"
		case k == "GIT_CONFIG_NOSYSTEM":
			nosystem = v == "1"
		case k == "GIT_CONFIG_COUNT":
			if v != "0" && v != "1" {
				return false
			}
		case k == "GIT_CONFIG_KEY_0":
			if v != "maintenance.auto" {
				return false
			}
		case k == "GIT_CONFIG_VALUE_0", strings.HasPrefix(k, "GIT_AUTHOR_"), strings.HasPrefix(k, "GIT_COMMITTER_"):
		case strings.HasPrefix(k, "GIT_"):
			return false // GIT_DIR, GIT_OBJECT_DIRECTORY, GIT_CONFIG_PARAMETERS, ...
		}
	}
	return global && nosystem
}

// commit writes c's blobs, trees and commit (its parent tip, this
// import's tip of its ref, unless From says another; marks the commits
// written so far) and returns the commit's id.
func (r *repo) commit(c Commit, tip string, marks []string, author, committer string) (string, bool) {
	from := tip
	if c.From != "" {
		var ok bool
		if from, ok = r.resolve(c.From, marks); !ok {
			return "", false
		}
	}
	var parents []string
	if from != "" {
		parents = append(parents, from)
	}
	for _, m := range c.Merge {
		h, ok := r.resolve(m, marks)
		if !ok {
			return "", false
		}
		parents = append(parents, h)
	}
	root := &treeNode{}
	if from != "" {
		t, ok := r.commitTree(from)
		if !ok {
			return "", false
		}
		root.hash = t
	}
	if !r.edit(root, c) {
		return "", false
	}
	tree, _, ok := r.writeTree(root)
	if !ok {
		return "", false
	}
	var b strings.Builder
	b.WriteString("tree " + tree + "\n")
	for _, p := range parents {
		b.WriteString("parent " + p + "\n")
	}
	b.WriteString("author " + author + "\ncommitter " + committer + "\n\n" + c.Message)
	return r.write("commit", []byte(b.String()))
}

// reaches reports whether from leads to to through parents (the
// imported commits' parents).
func reaches(parents map[string][]string, from, to string) bool {
	if from == to {
		return true
	}
	for _, p := range parents[from] {
		if reaches(parents, p, to) {
			return true
		}
	}
	return false
}

// commitParents reads the parents of the loose commit h.
func commitParents(r *repo, h string) []string {
	_, body, ok := r.read(h)
	if !ok {
		return nil
	}
	var ps []string
	for _, l := range strings.Split(string(body), "\n") {
		if l == "" {
			break
		}
		if p, ok := strings.CutPrefix(l, "parent "); ok {
			ps = append(ps, p)
		}
	}
	return ps
}

func envGet(env []string, k, def string) string {
	for _, kv := range slices.Backward(env) {
		if v, ok := strings.CutPrefix(kv, k+"="); ok {
			return v
		}
	}
	return def
}

func fullRef(ref string) string {
	if !strings.HasPrefix(ref, "refs/") {
		return "refs/heads/" + ref
	}
	return ref
}

// repo is a repository's git dir and common dir, as importLoose reads
// and writes them.
type repo struct {
	gitDir, common string
	bare           bool
}

// openRepo finds dir's git dir: dir/.git (a folder, or a file naming a
// linked worktree's), or dir itself when bare. ok false: a layout or a
// config importLoose leaves to fast-import.
func openRepo(dir string) (*repo, bool) {
	r := &repo{}
	dotGit := filepath.Join(dir, ".git")
	st, err := os.Stat(dotGit)
	switch {
	case err == nil && st.IsDir():
		r.gitDir = dotGit
	case err == nil:
		b, err := os.ReadFile(dotGit)
		gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
		if err != nil || !ok {
			return nil, false
		}
		if !filepath.IsAbs(gd) {
			gd = filepath.Join(dir, gd)
		}
		r.gitDir = gd
	default:
		if _, err := os.Stat(filepath.Join(dir, "objects")); err != nil {
			return nil, false
		}
		r.gitDir, r.bare = dir, true
	}
	r.common = r.gitDir
	if b, err := os.ReadFile(filepath.Join(r.gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(r.gitDir, c)
		}
		r.common = c
	}
	cfg, err := os.ReadFile(filepath.Join(r.common, "config"))
	if err != nil {
		return nil, false
	}
	logs := ""
	for _, l := range strings.Split(string(cfg), "\n") {
		l = strings.ToLower(strings.TrimSpace(l))
		if strings.HasPrefix(l, "[") {
			// SHA-256, reftable, a worktree config: fast-import's.
			if strings.HasPrefix(l, "[extensions") {
				return nil, false
			}
			continue
		}
		k, v, _ := strings.Cut(l, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "bare":
			r.bare = v == "true"
		case "logallrefupdates":
			logs = v
		case "sharedrepository", "worktree", "precomposeunicode", "protecthfs", "protectntfs":
			return nil, false
		}
	}
	// git init writes core.logAllRefUpdates = true where it is the
	// default (a repository with a worktree); anything else is left to
	// fast-import.
	if logs != "" && (logs != "true" || r.bare) {
		return nil, false
	}
	if _, err := os.Stat(filepath.Join(r.common, "objects", "info", "alternates")); err == nil {
		return nil, false
	}
	return r, true
}

// ref reads ref's value from its loose file or packed-refs; "" when it
// does not exist. ok false: a symbolic ref, or a file it cannot read.
func (r *repo) ref(ref string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(r.common, filepath.FromSlash(ref)))
	if err == nil {
		v := strings.TrimSpace(string(b))
		return v, isHash(v)
	}
	if !os.IsNotExist(err) {
		return "", false
	}
	b, err = os.ReadFile(filepath.Join(r.common, "packed-refs"))
	if os.IsNotExist(err) {
		return "", true
	}
	if err != nil {
		return "", false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if h, name, ok := strings.Cut(l, " "); ok && name == ref && isHash(h) {
			return h, true
		}
	}
	return "", true
}

func isHash(s string) bool {
	if len(s) != 40 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// resolve is rev as fast-import reads a from or merge line: a mark of
// this import (":N"), a full id, or a branch (with "^0"). ok false:
// anything else, or a branch name git might read as another ref.
func (r *repo) resolve(rev string, marks []string) (string, bool) {
	if n, ok := strings.CutPrefix(rev, ":"); ok {
		i, err := strconv.Atoi(n)
		if err != nil || i < 1 || i > len(marks) {
			return "", false
		}
		return marks[i-1], true
	}
	if isHash(rev) {
		return rev, true
	}
	name := strings.TrimSuffix(rev, "^0")
	if name == "" || strings.ContainsAny(name, "^~:@{} \\") || strings.HasPrefix(name, "refs/") {
		return "", false
	}
	// git's order: <name>, refs/<name>, refs/tags/<name>, then
	// refs/heads/<name>: only a name none of the first three is.
	if _, err := os.Stat(filepath.Join(r.gitDir, name)); err == nil {
		return "", false
	}
	for _, p := range []string{"refs/" + name, "refs/tags/" + name} {
		if v, ok := r.ref(p); !ok || v != "" {
			return "", false
		}
	}
	v, ok := r.ref("refs/heads/" + name)
	return v, ok && v != ""
}

// read reads the loose object h: its kind and body. ok false: not
// loose (packed, or missing).
func (r *repo) read(h string) (kind string, body []byte, ok bool) {
	f, err := os.Open(r.objectPath(h))
	if err != nil {
		return "", nil, false
	}
	defer f.Close()
	z, err := zlib.NewReader(bufio.NewReader(f))
	if err != nil {
		return "", nil, false
	}
	b, err := io.ReadAll(z)
	if err != nil {
		return "", nil, false
	}
	head, body, ok := bytes.Cut(b, []byte{0})
	kind, size, _ := strings.Cut(string(head), " ")
	if n, err := strconv.Atoi(size); !ok || err != nil || n != len(body) {
		return "", nil, false
	}
	return kind, body, true
}

func (r *repo) objectPath(h string) string {
	return filepath.Join(r.common, "objects", h[:2], h[2:])
}

// commitTree is the tree of the loose commit h.
func (r *repo) commitTree(h string) (string, bool) {
	kind, body, ok := r.read(h)
	t, ok2 := strings.CutPrefix(string(body), "tree ")
	if !ok || !ok2 || kind != "commit" || len(t) < 40 {
		return "", false
	}
	return t[:40], true
}

// write writes the object (kind, body) as git does, unless it is there
// (loose; a packed copy does not matter: git reads the loose one alike),
// and returns its id.
func (r *repo) write(kind string, body []byte) (string, bool) {
	obj := append([]byte(kind+" "+strconv.Itoa(len(body))+"\x00"), body...)
	sum := sha1.Sum(obj)
	h := hex.EncodeToString(sum[:])
	p := r.objectPath(h)
	if _, err := os.Stat(p); err == nil {
		return h, true
	}
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(obj)
	if w.Close() != nil {
		return "", false
	}
	if os.MkdirAll(filepath.Dir(p), 0o755) != nil {
		return "", false
	}
	return h, writeAtomic(p, z.Bytes(), 0o444)
}

// writeAtomic writes b to p as the driver replaces a file (a temp file
// beside it renamed over it; no fsync: a test's repository).
func writeAtomic(p string, b []byte, mode os.FileMode) bool {
	return atomicfile.Write(p, b, mode, atomicfile.NoSync(), atomicfile.Mode()) == nil
}

func errorsJoin(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// treeNode is a tree being edited: read from hash when entries is nil
// and hash is set.
type treeNode struct {
	hash    string
	entries map[string]*treeEntry // nil: not read yet
}

type treeEntry struct {
	mode string // as the tree object writes it: "40000", "100644", ...
	hash string
	sub  *treeNode // a folder's, once opened
}

func (e *treeEntry) isDir() bool { return e.mode == "40000" }

// load reads n's entries (once).
func (r *repo) load(n *treeNode) bool {
	if n.entries != nil {
		return true
	}
	n.entries = map[string]*treeEntry{}
	if n.hash == "" {
		return true
	}
	kind, body, ok := r.read(n.hash)
	if !ok || kind != "tree" {
		return false
	}
	for len(body) > 0 {
		sp := bytes.IndexByte(body, ' ')
		nul := bytes.IndexByte(body, 0)
		if sp < 0 || nul < sp || len(body) < nul+21 {
			return false
		}
		n.entries[string(body[sp+1:nul])] = &treeEntry{mode: string(body[:sp]), hash: hex.EncodeToString(body[nul+1 : nul+21])}
		body = body[nul+21:]
	}
	return true
}

// lookup walks to the folder holding p, making the folders on the way
// when mk (a file in the way is replaced, as fast-import does); nil when
// there is none or it cannot be read.
func (r *repo) lookup(root *treeNode, p string, mk bool) (*treeNode, string) {
	n := root
	parts := strings.Split(p, "/")
	for _, name := range parts[:len(parts)-1] {
		if !r.load(n) {
			return nil, ""
		}
		e := n.entries[name]
		if e == nil || !e.isDir() {
			if !mk {
				return nil, ""
			}
			e = &treeEntry{mode: "40000", sub: &treeNode{entries: map[string]*treeEntry{}}}
			n.entries[name] = e
		}
		if e.sub == nil {
			e.sub = &treeNode{hash: e.hash}
		}
		e.hash = "" // written anew
		n = e.sub
	}
	if !r.load(n) {
		return nil, ""
	}
	return n, parts[len(parts)-1]
}

// edit applies c's changes to root in fast-import's order: renames,
// deletions, files, links.
func (r *repo) edit(root *treeNode, c Commit) bool {
	for _, rn := range c.Renames {
		from, name := r.lookup(root, rn[0], false)
		if from == nil || from.entries[name] == nil {
			return false // fast-import's error to tell
		}
		e := from.entries[name]
		delete(from.entries, name)
		to, name := r.lookup(root, rn[1], true)
		if to == nil {
			return false
		}
		to.entries[name] = e
	}
	for _, p := range c.Delete {
		if n, name := r.lookup(root, p, false); n != nil {
			delete(n.entries, name)
		}
	}
	put := func(p, mode, content string) bool {
		h, ok := r.write("blob", []byte(content))
		n, name := r.lookup(root, p, true)
		if !ok || n == nil || name == "" {
			return false
		}
		n.entries[name] = &treeEntry{mode: mode, hash: h}
		return true
	}
	for _, p := range slices.Sorted(maps.Keys(c.Files)) {
		mode := "100644"
		if slices.Contains(c.Exec, p) {
			mode = "100755"
		}
		if !put(p, mode, c.Files[p]) {
			return false
		}
	}
	for _, p := range slices.Sorted(maps.Keys(c.Links)) {
		if !put(p, "120000", c.Links[p]) {
			return false
		}
	}
	return true
}

// writeTree writes n and the folders below it that changed, and returns
// its id and how many entries it holds; a folder left empty is dropped
// from its parent, as fast-import drops a folder a removal empties.
func (r *repo) writeTree(n *treeNode) (string, int, bool) {
	if n.entries == nil && n.hash != "" {
		return n.hash, 1, true // never opened: unchanged (and not empty)
	}
	type ent struct{ key, name, mode, hash string }
	var es []ent
	for name, e := range n.entries {
		if e.isDir() && e.sub != nil {
			h, count, ok := r.writeTree(e.sub)
			if !ok {
				return "", 0, false
			}
			if count == 0 {
				continue
			}
			e.hash = h
		}
		key := name
		if e.isDir() {
			key += "/" // git sorts a folder as its name with a slash
		}
		es = append(es, ent{key, name, e.mode, e.hash})
	}
	slices.SortFunc(es, func(a, b ent) int { return strings.Compare(a.key, b.key) })
	var b bytes.Buffer
	for _, e := range es {
		raw, err := hex.DecodeString(e.hash)
		if err != nil || len(raw) != 20 {
			return "", 0, false
		}
		b.WriteString(e.mode + " " + e.name + "\x00")
		b.Write(raw)
	}
	h, ok := r.write("tree", b.Bytes())
	return h, len(es), ok
}

// setRef points ref at tip (it was old, "" none) as a loose ref file, and
// adds the reflog lines git's ref update adds in a repository with a
// worktree (core.logAllRefUpdates' default): the ref's, and HEAD's when
// HEAD names the ref.
func (r *repo) setRef(ref, old, tip, committer string) bool {
	p := filepath.Join(r.common, filepath.FromSlash(ref))
	if os.MkdirAll(filepath.Dir(p), 0o755) != nil || !writeAtomic(p, []byte(tip+"\n"), 0o644) {
		return false
	}
	if old == "" {
		old = strings.Repeat("0", 40)
	}
	line := old + " " + tip + " " + reflogIdent(committer) + "\tfast-import\n"
	logs := []string{filepath.Join(r.common, "logs", filepath.FromSlash(ref))}
	if b, err := os.ReadFile(filepath.Join(r.gitDir, "HEAD")); err == nil && strings.TrimSpace(string(b)) == "ref: "+ref {
		logs = append(logs, filepath.Join(r.gitDir, "logs", "HEAD"))
	}
	for i, l := range logs {
		_, err := os.Stat(l)
		if r.bare && err != nil {
			continue // a bare repository logs only where a log is
		}
		if i == 0 && err != nil && !strings.HasPrefix(ref, "refs/heads/") && !strings.HasPrefix(ref, "refs/remotes/") && !strings.HasPrefix(ref, "refs/notes/") {
			continue
		}
		if os.MkdirAll(filepath.Dir(l), 0o755) != nil {
			return false
		}
		f, err := os.OpenFile(l, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return false
		}
		_, err = f.WriteString(line)
		if errorsJoin(err, f.Close()) != nil {
			return false
		}
	}
	return true
}

// reflogIdent is the committer line's "name <email> seconds zone" with
// the zone of now, as git writes a reflog entry.
func reflogIdent(committer string) string {
	i := strings.LastIndexByte(committer, '>')
	_, off := time.Now().Zone()
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	return fmt.Sprintf("%s %d %c%02d%02d", committer[:i+1], time.Now().Unix(), sign, off/3600, off/60%60)
}
