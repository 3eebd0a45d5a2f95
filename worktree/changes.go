package worktree

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Changes is what one diff of two commits says: the paths that differ
// (DiffNames' list) and, among them, the files whose added lines git
// would call leftover conflict markers (MarkerCandidates' list).
type Changes struct {
	Paths, Markers []string
}

// BranchChanges reads the paths and conflict-marker candidates of what
// tip changed since its merge base with base, from one `git diff -p
// base...tip` (issue 25 §1: the merge-base, diff-tree --name-only and
// diff --check it replaces were a git process each per landed phase; no
// merge base is an error). Every option that steers the porcelain's
// output is given on the command line, so the user's diff config does
// not change what is read. Paths come from the patch headers, which name each path twice
// without renames (a type change is two patches of one path, listed
// once); a header it cannot read is an error, never a path skipped. A
// line of seven '=' alone is also a markdown underline, so callers
// confirm the markers on the content, as for MarkerCandidates.
func (c *Client) BranchChanges(ctx context.Context, base, tip string) (Changes, error) {
	var ch Changes
	var cr ChangeReader
	read := func(r io.Reader) error {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			cr.Line(sc.Text())
		}
		return sc.Err()
	}
	err := c.GitStream(ctx, "", read, append(append([]string{"-c", "core.quotePath=false", "diff", "-p", "-U0", "--no-renames", "--no-color",
		"--no-ext-diff", "--no-textconv"}, PatchOptions()...), "--end-of-options", base+"..."+tip)...)
	if err == nil {
		ch, err = cr.Changes()
	}
	if err != nil {
		return Changes{}, fmt.Errorf("the changes of %s since its merge base with %s: %w", tip, base, err)
	}
	return ch, nil
}

// PatchOptions are the options of a patch ChangeReader reads, given on
// the command line so that the user's diff config (diff.ignoreSubmodules,
// diff.relative, diff.noprefix, diff.mnemonicPrefix) does not change what
// is read.
func PatchOptions() []string {
	return []string{"--ignore-submodules=none", "--no-relative", "--src-prefix=a/", "--dst-prefix=b/"}
}

// ChangeReader reads the Changes of one patch (git diff -p -U0 with
// PatchOptions, or a part of git log -p's output that is one diff), line
// by line, as BranchChanges reads its own.
type ChangeReader struct {
	ch     Changes
	seen   map[string]bool
	cur    string
	marked bool
	err    error
}

// Line reads one line of the patch (without its newline).
func (r *ChangeReader) Line(line string) {
	if rest, ok := strings.CutPrefix(line, "diff --git "); ok {
		p, err := headerPath(rest)
		if err != nil {
			if r.err == nil {
				r.err = err
			}
			r.cur = ""
			return
		}
		r.cur, r.marked = p, false
		if r.seen == nil {
			r.seen = map[string]bool{}
		}
		if !r.seen[p] {
			r.seen[p] = true
			r.ch.Paths = append(r.ch.Paths, p)
		}
		return
	}
	if !r.marked && r.cur != "" && strings.HasPrefix(line, "+") && isConflictMarker(line[1:]) {
		r.marked = true
		if !seenMarker(r.ch.Markers, r.cur) {
			r.ch.Markers = append(r.ch.Markers, r.cur)
		}
	}
}

// Changes is what the lines read say; a header it could not read is an
// error, never a path skipped.
func (r *ChangeReader) Changes() (Changes, error) {
	if r.err != nil {
		return Changes{}, r.err
	}
	return r.ch, nil
}

func seenMarker(ms []string, p string) bool {
	return len(ms) > 0 && ms[len(ms)-1] == p
}

// isConflictMarker is git's test for a leftover conflict marker (diff.c,
// the default marker size 7): seven of '<', '=', '>' or '|', then
// whitespace or the line's end.
func isConflictMarker(l string) bool {
	if len(l) < 7 || !strings.ContainsRune("<=>|", rune(l[0])) {
		return false
	}
	for i := 1; i < 7; i++ {
		if l[i] != l[0] {
			return false
		}
	}
	return len(l) == 7 || strings.ContainsRune(" \t\r\n\v\f", rune(l[7]))
}

var errHeader = errors.New("a patch header names no path read here")

// headerPath is the path a `diff --git` header names (rest is what
// follows "diff --git "): "a/P b/P", or both quoted as git quotes a path
// with a control character, '"' or '\'.
func headerPath(rest string) (string, error) {
	if strings.HasPrefix(rest, `"`) {
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return "", fmt.Errorf("%w: %q", errHeader, rest)
		}
		a, err := strconv.Unquote(q)
		if err != nil || !strings.HasPrefix(a, "a/") {
			return "", fmt.Errorf("%w: %q", errHeader, rest)
		}
		if !strings.HasPrefix(rest[len(q):], " ") || !sameQuoted(rest[len(q)+1:], "b/"+a[2:]) {
			return "", fmt.Errorf("%w: %q", errHeader, rest)
		}
		return a[2:], nil
	}
	n := len(rest) - len("a/ b/")
	if n <= 0 || n%2 != 0 {
		return "", fmt.Errorf("%w: %q", errHeader, rest)
	}
	p := rest[2 : 2+n/2]
	if rest != "a/"+p+" b/"+p {
		return "", fmt.Errorf("%w: %q", errHeader, rest)
	}
	return p, nil
}

// sameQuoted reports whether q is one quoted string that says p.
func sameQuoted(q, p string) bool {
	u, err := strconv.Unquote(q)
	return err == nil && u == p
}
