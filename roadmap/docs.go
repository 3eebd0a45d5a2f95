package roadmap

import (
	"fmt"
	"path"
	"strings"

	"github.com/claudopilot/claudopilot/protect"
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
	id, done := DocOwner(f, func(id string) bool { return r.byID[id] != nil })
	if id == "" {
		return nil, "", false
	}
	return r.byID[id], id, done
}

// DocOwner returns the phase (among those isPhase knows) whose doc the
// file name f is, "" when none, and whether it is a DONE_ doc: the
// longest id the name starts with, followed by ".md" or "-".
func DocOwner(f string, isPhase func(id string) bool) (id string, done bool) {
	if f == ManifestName || !strings.HasSuffix(f, ".md") {
		return "", false
	}
	done = strings.HasPrefix(f, DonePrefix)
	stem := strings.TrimSuffix(strings.TrimPrefix(f, DonePrefix), ".md")
	if isPhase(stem) {
		return stem, done
	}
	// Try every cut at a '-' from the right: the longest id wins.
	for i := len(stem) - 1; i > 0; i-- {
		if stem[i] == '-' && isPhase(stem[:i]) {
			return stem[:i], done
		}
	}
	return "", false
}

// Protected declares the files the roadmap reads, for the landing's check
// (package protect): the manifest (and, when it is a symlink, target, the
// file it leads to, as Layout.Manifest says; "" when none), and the phase
// docs. The loader lists the whole folder, so in a folder of its own
// every .md file is protected (a doc written now for a phase added later
// is read then); at the repository's top level (dir ".") only the docs of
// this roadmap's phases. dir is the folder from the repository's top,
// slash-separated. A phase may still change its own doc: the landing
// lets that through (DocOwner).
func (r *Roadmap) Protected(dir, target string) []protect.Rule {
	const manifestWhy = "the manifest, read by the roadmap loader: only the driver flips its states"
	const docWhy = "a phase doc, read by the roadmap loader: a phase changes only its own"
	dir = path.Clean(dir)
	in := func(name string) string {
		if dir == "." {
			return name
		}
		return protect.Literal(dir) + "/" + name
	}
	rules := []protect.Rule{{Glob: in(ManifestName), Why: manifestWhy}}
	if target != "" {
		rules = append(rules, protect.Rule{Glob: protect.Literal(target), Why: manifestWhy})
	}
	if dir != "." {
		return append(rules, protect.Rule{Glob: in("*.md"), Why: docWhy})
	}
	for _, n := range r.Nodes {
		id := protect.Literal(n.ID)
		for _, g := range []string{id + ".md", id + "-*.md", DonePrefix + id + ".md", DonePrefix + id + "-*.md"} {
			rules = append(rules, protect.Rule{Glob: in(g), Why: docWhy})
		}
	}
	return rules
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
