package gittest

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/claudopilot/claudopilot/internal/gitobj"
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
	who := func(role string) string {
		return envGet(env, "GIT_"+role+"_NAME", "t") + " <" + envGet(env, "GIT_"+role+"_EMAIL", "t@x") + ">"
	}
	author, committer := who("AUTHOR")+" "+when, who("COMMITTER")+" "+when
	tips := map[string]string{} // ref → its tip as this import left it
	old := map[string]string{}  // ref → its value before ("" none)
	for _, c := range commits {
		ref := fullRef(c.Ref)
		if _, seen := old[ref]; !seen {
			v, err := r.Ref(ref)
			if err != nil {
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
		// fast-import's reflog line: the committer now, "fast-import".
		if r.MoveRef(ref, tips[ref], old[ref], &gitobj.Reflog{Who: who("COMMITTER"), Msg: "fast-import"}) != nil {
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
	h, err := r.Write("commit", gitobj.CommitBody(tree, parents, author, committer, c.Message))
	return h, err == nil
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
	body, err := r.ReadKind("commit", h)
	if err != nil {
		return nil
	}
	_, ps, _ := gitobj.ParseCommit(body)
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

// repo is the repository importLoose writes in (gitobj's files).
type repo struct{ *gitobj.Repo }

// openRepo opens dir's repository (gitobj.Open: SHA-1, refs in files, no
// extension). ok false: a layout or a config importLoose leaves to
// fast-import.
func openRepo(dir string) (*repo, bool) {
	g, ok := gitobj.Open(dir)
	if !ok {
		return nil, false
	}
	for _, k := range []string{"sharedrepository", "worktree", "precomposeunicode", "protecthfs", "protectntfs"} {
		if _, set := g.Core[k]; set {
			return nil, false
		}
	}
	// git init writes core.logAllRefUpdates = true where it is the
	// default (a repository with a worktree); anything else is left to
	// fast-import.
	if logs, set := g.Core["logallrefupdates"]; set && (logs != "true" || g.Bare) {
		return nil, false
	}
	if _, err := os.Stat(filepath.Join(g.Common, "objects", "info", "alternates")); err == nil {
		return nil, false
	}
	return &repo{g}, true
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
	if gitobj.IsID(rev) {
		return rev, true
	}
	name := strings.TrimSuffix(rev, "^0")
	if name == "" || strings.ContainsAny(name, "^~:@{} \\") || strings.HasPrefix(name, "refs/") {
		return "", false
	}
	// git's order: <name>, refs/<name>, refs/tags/<name>, then
	// refs/heads/<name>: only a name none of the first three is.
	if _, err := os.Stat(filepath.Join(r.GitDir, name)); err == nil {
		return "", false
	}
	for _, p := range []string{"refs/" + name, "refs/tags/" + name} {
		if v, err := r.Ref(p); err != nil || v != "" {
			return "", false
		}
	}
	v, err := r.Ref("refs/heads/" + name)
	return v, err == nil && v != ""
}

// commitTree is the tree of the loose commit h.
func (r *repo) commitTree(h string) (string, bool) {
	body, err := r.ReadKind("commit", h)
	if err != nil {
		return "", false
	}
	t, _, err := gitobj.ParseCommit(body)
	return t, err == nil
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
	body, err := r.ReadKind("tree", n.hash)
	if err != nil {
		return false
	}
	es, err := gitobj.ParseTree(body)
	if err != nil {
		return false
	}
	for _, e := range es {
		n.entries[e.Name] = &treeEntry{mode: e.Mode, hash: e.ID}
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
		h, err := r.Write("blob", []byte(content))
		n, name := r.lookup(root, p, true)
		if err != nil || n == nil || name == "" {
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
	var es []gitobj.Entry
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
		es = append(es, gitobj.Entry{Mode: e.mode, Name: name, ID: e.hash})
	}
	body, err := gitobj.FormatTree(es) // git's order
	if err != nil {
		return "", 0, false
	}
	h, err := r.Write("tree", body)
	return h, len(es), err == nil
}
