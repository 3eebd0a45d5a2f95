package worktree

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// errAskGit: the trees hold what readTreeDiff leaves to git diff-tree.
var errAskGit = errors.New("ask git")

// readTreeDiff is `git diff-tree -r --no-renames --raw -z old new`'s
// output fields (":<old mode> <new mode> <old id> <new id> <status>",
// path, …), computed from the two commits' trees read through the
// long-lived cat-file: no process for the base checkout's move (issue 25
// §1: a diff-tree per landing). Only the trees on the changed paths are
// read. A gitlink that changed (diff.ignoreSubmodules may hide it from
// git), or any read that fails, gives errAskGit or the error, and the
// caller asks git.
func (c *Client) readTreeDiff(ctx context.Context, oldSHA, newSHA string) ([]string, error) {
	roots, err := c.readBatch(ctx, oldSHA+"^{tree}", newSHA+"^{tree}")
	if err != nil {
		return nil, err
	}
	if len(roots) != 2 || roots[0].missing || roots[1].missing || roots[0].kind != "tree" || roots[1].kind != "tree" {
		return nil, errAskGit
	}
	d := &treeWalk{c: c, ctx: ctx, hashLen: len(roots[0].id) / 2}
	d.null = strings.Repeat("0", 2*d.hashLen)
	if err := d.trees("", roots[0].data, roots[1].data); err != nil {
		return nil, err
	}
	return d.out, nil
}

// treeWalk is one readTreeDiff under way.
type treeWalk struct {
	c       *Client
	ctx     context.Context
	hashLen int
	null    string
	out     []string
}

// trees compares two tree objects' bodies (nil: no tree) under prefix, in
// git's order of entries (a tree's name sorts as if it ended in '/').
func (d *treeWalk) trees(prefix string, oldRaw, newRaw []byte) error {
	olds, err := parseTree(oldRaw, d.hashLen)
	if err != nil {
		return err
	}
	news, err := parseTree(newRaw, d.hashLen)
	if err != nil {
		return err
	}
	i, j := 0, 0
	for i < len(olds) || j < len(news) {
		var o, n *treeEntry
		switch {
		case j == len(news):
			o = &olds[i]
		case i == len(olds):
			n = &news[j]
		default:
			switch cmp := entryCompare(olds[i], news[j]); {
			case cmp < 0:
				o = &olds[i]
			case cmp > 0:
				n = &news[j]
			default:
				o, n = &olds[i], &news[j]
			}
		}
		if o != nil {
			i++
		}
		if n != nil {
			j++
		}
		if err := d.entry(prefix, o, n); err != nil {
			return err
		}
	}
	return nil
}

// entry compares one name's entries (either nil where the name is not).
func (d *treeWalk) entry(prefix string, o, n *treeEntry) error {
	if o != nil && n != nil && o.oid == n.oid && o.mode == n.mode {
		return nil
	}
	e := o
	if e == nil {
		e = n
	}
	p := prefix + e.name
	if (o != nil && o.mode == "160000") || (n != nil && n.mode == "160000") {
		return errAskGit
	}
	if e.mode == "40000" { // both trees, or one side only
		var ids []string
		if o != nil {
			ids = append(ids, o.oid)
		}
		if n != nil {
			ids = append(ids, n.oid)
		}
		objs, err := d.c.readBatch(d.ctx, ids...)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			if obj.missing || obj.kind != "tree" {
				return fmt.Errorf("tree %s at %s: %w", obj.id, p, errAskGit)
			}
		}
		var oldRaw, newRaw []byte
		if o != nil {
			oldRaw = objs[0].data
		}
		if n != nil {
			newRaw = objs[len(objs)-1].data
		}
		return d.trees(p+"/", oldRaw, newRaw)
	}
	oldMode, newMode, oldID, newID, status := "000000", "000000", d.null, d.null, "M"
	switch {
	case o == nil:
		status = "A"
	case n == nil:
		status = "D"
	case fileType(o.mode) != fileType(n.mode):
		status = "T"
	}
	if o != nil {
		oldMode, oldID = pad6(o.mode), o.oid
	}
	if n != nil {
		newMode, newID = pad6(n.mode), n.oid
	}
	d.out = append(d.out, ":"+oldMode+" "+newMode+" "+oldID+" "+newID+" "+status, p)
	return nil
}

// entryCompare is git's order of tree entries: by name, a tree's name
// compared as if it ended in '/'.
func entryCompare(a, b treeEntry) int {
	an, bn := a.name, b.name
	if a.mode == "40000" {
		an += "/"
	}
	if b.mode == "40000" {
		bn += "/"
	}
	return strings.Compare(an, bn)
}

// fileType is a mode's kind: regular file, link, gitlink.
func fileType(mode string) string {
	if mode == "100644" || mode == "100755" || mode == "100664" {
		return "file"
	}
	return mode
}

// pad6 is a mode as diff's raw format writes it (six octal digits).
func pad6(mode string) string {
	for len(mode) < 6 {
		mode = "0" + mode
	}
	return mode
}
