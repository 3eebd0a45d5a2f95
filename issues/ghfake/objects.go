package ghfake

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/internal/gitobj"
	"github.com/claudopilot/claudopilot/worktree"
)

// What GitHub's own git writes into the origin (a merge's commit, a
// branch moved by a merge or an update, a person's commit made on the
// web) the fake writes in Go, as git's files (package internal/gitobj,
// their one home): loose objects and loose refs moved under git's lock
// with the old value checked. git reads them as it
// reads what receive-pack writes. A commit-tree and an update-ref were two
// git processes per merge, a web commit six (hash-object, read-tree,
// update-index, write-tree, commit-tree, update-ref): a test's cost is its
// processes (BENCHMARKS.md §5, session 13). An origin whose config names
// an extension (another object format, another ref storage) is left to
// git, as before.

// plainFiles is the origin's files when it keeps SHA-1 objects and refs
// in files (no extension in its config) and is bare, as GitHub's: what
// the fake writes itself; nil otherwise (git writes, with the reflog a
// repository with a worktree keeps).
func plainFiles(origin string) *gitobj.Repo {
	r, ok := gitobj.Open(origin)
	if !ok || !r.Bare {
		return nil
	}
	return r
}

// readObject reads object id's body from its loose file, or (packed) from
// git cat-file, checking its kind.
func (s *Server) readObject(ctx context.Context, kind, id string) ([]byte, error) {
	body, err := s.looseObject(kind, id)
	if errors.Is(err, gitobj.ErrNotLoose) {
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
	if s.obj == nil {
		return s.git.CommitTree(ctx, tree, parents, msg)
	}
	if msg != "" && !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	when := gitobj.Ident(who, time.Now())
	return s.obj.Write("commit", gitobj.CommitBody(tree, parents, when, when, msg))
}

// moveRef moves ref (refs/heads/…) to id if it is at old now ("": absent),
// as update-ref <ref> <id> <old> does; gitobj.ErrRefMoved (wrapped)
// otherwise. The lock is waited for up to 100 ms, as git's
// core.filesRefLockTimeout.
func (s *Server) moveRef(ctx context.Context, ref, id, old string) error {
	if s.obj == nil {
		if old == "" {
			old = strings.Repeat("0", 40)
		}
		return s.git.UpdateRef(ctx, ref, id, old)
	}
	return s.obj.MoveRef(ref, id, old, nil) // a bare origin: no reflog
}

// withFile is tree (its id; "" for none) with the file at slash-separated
// p holding the blob id (mode 100644), written with the trees above it.
func (s *Server) withFile(ctx context.Context, tree, p, blob string) (string, error) {
	first, rest, nested := strings.Cut(p, "/")
	if first == "" || first == "." || first == ".." || first == ".git" {
		return "", fmt.Errorf("bad path %q", p)
	}
	var entries []gitobj.Entry
	if tree != "" {
		body, err := s.readObject(ctx, "tree", tree)
		if err != nil {
			return "", err
		}
		if entries, err = gitobj.ParseTree(body); err != nil {
			return "", fmt.Errorf("tree %s: %w", tree, err)
		}
	}
	entry := gitobj.Entry{Mode: gitobj.ModeFile, Name: first}
	i := slices.IndexFunc(entries, func(e gitobj.Entry) bool { return e.Name == first })
	found := i >= 0
	id := blob
	if nested {
		sub := ""
		if found {
			if !entries[i].IsDir() {
				return "", fmt.Errorf("%s is not a folder", first)
			}
			sub = entries[i].ID
		}
		var err error
		if id, err = s.withFile(ctx, sub, rest, blob); err != nil {
			return "", err
		}
		entry.Mode = gitobj.ModeDir
	} else if found && entries[i].IsDir() {
		return "", fmt.Errorf("%s is a folder", first)
	}
	entry.ID = id
	if found {
		entries[i] = entry
	} else {
		entries = append(entries, entry)
	}
	body, err := gitobj.FormatTree(entries) // git's order
	if err != nil {
		return "", err
	}
	return s.obj.Write("tree", body)
}

// treeWith is tree with the file at p holding body: written by the fake,
// or by git (ReplaceFiles) in an origin it leaves to git.
func (s *Server) treeWith(ctx context.Context, tree, p, body string) (string, error) {
	if s.obj == nil {
		return s.git.ReplaceFiles(ctx, tree, map[string][]byte{p: []byte(body)}, nil)
	}
	blob, err := s.obj.Write("blob", []byte(body))
	if err != nil {
		return "", err
	}
	return s.withFile(ctx, tree, p, blob)
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

// looseObject is readObject from the loose file only:
// gitobj.ErrNotLoose when there is none (or the origin is left to git).
func (s *Server) looseObject(kind, id string) ([]byte, error) {
	if s.obj == nil {
		return nil, gitobj.ErrNotLoose
	}
	return s.obj.ReadKind(kind, id)
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
	if s.obj == nil || !plainBranch(b) {
		return s.git.RevParse(ctx, "refs/heads/"+b)
	}
	id, err := s.obj.Ref("refs/heads/" + b)
	switch {
	case errors.Is(err, gitobj.ErrNotPlain):
		return s.git.RevParse(ctx, "refs/heads/"+b)
	case err != nil:
		return "", err
	case id == "":
		return "", fmt.Errorf("refs/heads/%s: %w", b, worktree.ErrNoRev)
	}
	return id, nil
}

// commitOf is commit id's tree and parents (first parent first): from
// its loose object, else asked of git (<id>^{tree}, then <id>^1, ^2, …
// until one does not resolve, as before).
func (s *Server) commitOf(ctx context.Context, id string) (tree string, parents []string, err error) {
	body, err := s.looseObject("commit", id)
	if errors.Is(err, gitobj.ErrNotLoose) {
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
	if tree, parents, err = gitobj.ParseCommit(body); err != nil {
		return "", nil, fmt.Errorf("commit %s: %w", id, err)
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
	if !gitobj.IsID(id) {
		if s.obj == nil || !plainBranch(branch) {
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
		es, err := gitobj.ParseTree(body)
		if err != nil {
			return ask()
		}
		i := slices.IndexFunc(es, func(e gitobj.Entry) bool { return e.Name == name })
		if i < 0 || k < len(names)-1 && !es[i].IsDir() {
			return false // (a file is no folder)
		}
		tree = es[i].ID
	}
	return true
}
