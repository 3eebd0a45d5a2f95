package roadmap

import (
	"fmt"
	"strings"
)

// attachDocs gives each phase its doc. A file belongs to the phase whose id
// is the longest one the name starts with, followed by ".md" or "-": so
// "phase-10-api.md" belongs to phase-10 and never to phase-1 (Claudopilot
// matched by prefix and merged an unfinished phase that way).
func attachDocs(r *Roadmap, files []string) {
	for _, f := range files {
		n, _, done := r.docOwner(f)
		if n == nil {
			continue
		}
		name := strings.TrimPrefix(f, DonePrefix)
		if n.Doc == "" || (done && !n.Done) {
			n.Doc = name
			n.Done = done
		}
	}
}

// docOwner returns the phase a file name belongs to, and whether it is a
// DONE_ doc.
func (r *Roadmap) docOwner(f string) (*Node, string, bool) {
	if f == ManifestName || !strings.HasSuffix(f, ".md") {
		return nil, "", false
	}
	done := strings.HasPrefix(f, DonePrefix)
	stem := strings.TrimSuffix(strings.TrimPrefix(f, DonePrefix), ".md")
	if n := r.byID[stem]; n != nil {
		return n, stem, done
	}
	// Try every cut at a '-' from the right: the longest id wins.
	for i := len(stem) - 1; i > 0; i-- {
		if stem[i] == '-' {
			if n := r.byID[stem[:i]]; n != nil {
				return n, stem[:i], done
			}
		}
	}
	return nil, "", false
}

// docProblems reports phases with two docs, or with both X and DONE_X
// (unless midRename: then that pair is a doc being renamed).
func (r *Roadmap) docProblems(files []string, midRename bool, bad *InvalidError) {
	seen := make(map[*Node][]string)
	for _, f := range files {
		if n, _, _ := r.docOwner(f); n != nil {
			seen[n] = append(seen[n], f)
		}
	}
	for _, n := range r.Nodes {
		fs := seen[n]
		if len(fs) < 2 || (midRename && len(fs) == 2 && renamed(fs[0], fs[1])) {
			continue
		}
		bad.add(n.Line, fmt.Sprintf("phase %s has more than one doc: %s", n.ID, strings.Join(fs, ", ")))
	}
}

// renamed is true when one of a and b is the other with DonePrefix.
func renamed(a, b string) bool {
	return a == DonePrefix+b || b == DonePrefix+a
}

// DocPath returns the doc's current file name: DONE_<Doc> when done.
func (n *Node) DocPath() string {
	if n.Done {
		return DonePrefix + n.Doc
	}
	return n.Doc
}
