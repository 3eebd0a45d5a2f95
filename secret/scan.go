package secret

import (
	"bufio"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/claudopilot/claudopilot/worktree"
)

// Finding is one secret: where it is and what kind. Never its value.
type Finding struct {
	Path   string
	Line   int
	Kind   string
	Commit string // set when only a commit of the history adds it (a later one removed it)
}

func (f Finding) String() string {
	if f.Commit != "" {
		return fmt.Sprintf("%s:%d (added by commit %.12s): %s", f.Path, f.Line, f.Commit, f.Kind)
	}
	return fmt.Sprintf("%s:%d: %s", f.Path, f.Line, f.Kind)
}

// Describe lists findings for a failure detail, at most ten.
func Describe(fs []Finding) string {
	parts := make([]string, 0, min(len(fs), 10)+1)
	for i, f := range fs {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(fs)-10))
			break
		}
		parts = append(parts, f.String())
	}
	return "secrets in what the merge adds: " + strings.Join(parts, "; ")
}

// Landing scans what landing commit to on from adds: the lines its tree
// adds over from's, and the lines each commit from..to adds (merge
// commits aside), since a merge carries the branch's history onto the
// base too: a secret committed and removed later is still there.
func Landing(ctx context.Context, git *worktree.Client, from, to string) ([]Finding, error) {
	return landing(ctx, git, from, to, Line)
}

// landing is Landing with check telling the kind of secret a line holds.
func landing(ctx context.Context, git *worktree.Client, from, to string, check func(string) string) ([]Finding, error) {
	tree, err := scanDiff(ctx, git, "diff", from, to, check)
	if err != nil {
		return nil, err
	}
	hist, err := scanDiff(ctx, git, "log", from, to, check)
	if err != nil {
		return nil, err
	}
	type key struct {
		path, kind string
	}
	seen := map[key]bool{}
	for _, f := range tree {
		seen[key{f.Path, f.Kind}] = true
	}
	for _, f := range hist {
		if !seen[key{f.Path, f.Kind}] {
			seen[key{f.Path, f.Kind}] = true
			tree = append(tree, f)
		}
	}
	return tree, nil
}

// scanDiff reads `git diff from to` or `git log -p from..to` with no
// context lines and scans each added line.
func scanDiff(ctx context.Context, git *worktree.Client, how, from, to string, check func(string) string) ([]Finding, error) {
	out, err := git.AddedLines(ctx, from, to, how != "diff")
	if err != nil {
		return nil, fmt.Errorf("scan for secrets: %w", err)
	}
	var (
		found        []Finding
		commit, path string
		line         int
		inHunk       bool
	)
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "commit ") && how == "log":
			commit, path, inHunk = strings.TrimPrefix(l, "commit "), "", false
		case strings.HasPrefix(l, "diff --git "):
			path, inHunk = "", false
		case !inHunk && strings.HasPrefix(l, "+++ "):
			path = diffPath(strings.TrimPrefix(l, "+++ "))
		case strings.HasPrefix(l, "@@ "):
			inHunk, line = true, hunkStart(l)
		case inHunk && strings.HasPrefix(l, "+"):
			if kind := check(l[1:]); kind != "" && path != "" {
				found = append(found, Finding{Path: path, Line: line, Kind: kind, Commit: commit})
			}
			line++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scan for secrets: %w", err)
	}
	slices.SortStableFunc(found, func(a, b Finding) int { return strings.Compare(a.Path, b.Path) })
	return found, nil
}

// diffPath reads the path of a "+++ b/<path>" line ("" for /dev/null),
// unquoting git's C-style quotes.
func diffPath(s string) string {
	// git ends a path holding a space with a tab.
	s = strings.TrimSuffix(s, "\t")
	if s == "/dev/null" {
		return ""
	}
	if strings.HasPrefix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			s = u
		}
	}
	return strings.TrimPrefix(s, "b/")
}

// hunkStart reads c from "@@ -a,b +c,d @@".
func hunkStart(l string) int {
	_, rest, _ := strings.Cut(l, " +")
	num, _, _ := strings.Cut(rest, " ")
	num, _, _ = strings.Cut(num, ",")
	n, _ := strconv.Atoi(num)
	return n
}
