package gitobj

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Modes as a tree object writes them.
const (
	ModeDir  = "40000"
	ModeFile = "100644"
	ModeExec = "100755"
	ModeLink = "120000"
)

// Entry is one entry of a tree object; ID in hex.
type Entry struct {
	Mode, Name, ID string
}

// IsDir reports whether e is a folder (a tree).
func (e Entry) IsDir() bool { return e.Mode == ModeDir }

// ParseTree splits a tree object's body into its entries, in its order.
func ParseTree(b []byte) ([]Entry, error) {
	var out []Entry
	for len(b) > 0 {
		sp := bytes.IndexByte(b, ' ')
		nul := bytes.IndexByte(b, 0)
		if sp < 0 || nul < sp || len(b) < nul+21 {
			return nil, errors.New("malformed tree")
		}
		out = append(out, Entry{Mode: string(b[:sp]), Name: string(b[sp+1 : nul]), ID: hex.EncodeToString(b[nul+1 : nul+21])})
		b = b[nul+21:]
	}
	return out, nil
}

// FormatTree is the body of the tree of entries, sorted in git's order
// (a folder sorts as its name with a slash after it: "a.txt" < "a/" but
// "a" file < "a.txt"); fsck --strict refuses any other order. es is
// sorted in place.
func FormatTree(es []Entry) ([]byte, error) {
	key := func(e Entry) string {
		if e.IsDir() {
			return e.Name + "/"
		}
		return e.Name
	}
	slices.SortFunc(es, func(a, b Entry) int { return strings.Compare(key(a), key(b)) })
	var b bytes.Buffer
	for _, e := range es {
		raw, err := hex.DecodeString(e.ID)
		if err != nil || len(raw) != 20 {
			return nil, fmt.Errorf("tree entry %q: bad id %q", e.Name, e.ID)
		}
		b.WriteString(e.Mode + " " + e.Name + "\x00")
		b.Write(raw)
	}
	return b.Bytes(), nil
}

// CommitBody is a commit object's body: tree, parents (first parent
// first), author and committer ("Name <email> <seconds> <zone>", see
// Ident), a blank line and msg as given.
func CommitBody(tree string, parents []string, author, committer, msg string) []byte {
	var b strings.Builder
	b.WriteString("tree " + tree + "\n")
	for _, p := range parents {
		b.WriteString("parent " + p + "\n")
	}
	b.WriteString("author " + author + "\ncommitter " + committer + "\n\n" + msg)
	return []byte(b.String())
}

// ParseCommit reads a commit body's tree and parents (first parent
// first); an error when it names no tree.
func ParseCommit(body []byte) (tree string, parents []string, err error) {
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
	if !IsID(tree) {
		return "", nil, errors.New("malformed commit: no tree")
	}
	return tree, parents, nil
}

// Ident is who ("Name <email>") at t as git writes it in a commit or a
// reflog line: "Name <email> <unix seconds> <+hhmm of t's zone>".
func Ident(who string, t time.Time) string {
	_, off := t.Zone()
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	return fmt.Sprintf("%s %d %c%02d%02d", who, t.Unix(), sign, off/3600, off/60%60)
}
