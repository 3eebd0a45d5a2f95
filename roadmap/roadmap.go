package roadmap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/dominikbraun/graph"

	"github.com/claudopilot/claudopilot/manifest"
)

// ManifestName is the manifest's file name inside a roadmap folder.
const ManifestName = "EXECUTION-MANIFEST.md"

// DonePrefix marks a finished phase doc.
const DonePrefix = "DONE_"

// Node is one phase in the graph.
type Node struct {
	manifest.Phase
	Index int    // file order, 0-based
	Doc   string // the doc's file name without DONE_ ("phase-02-api.md"); "" when none
	Done  bool   // the doc is present as DONE_<Doc>
	// External lists deps outside the manifest (issues "#12" in queue
	// mode), done when their tracker says so.
	External []string
	// Outside marks a node from outside the manifest (an issue of the
	// queue, added by With): it has no line, doc or manifest state.
	Outside bool

	deps       []int // indices of the phases this one depends on
	dependents []int
}

// Roadmap is a validated manifest: a DAG of phases.
type Roadmap struct {
	Dir          string // folder holding the manifest and phase docs
	ManifestPath string
	Manifest     *manifest.Manifest
	Nodes        []*Node // file order
	byID         map[string]*Node
	// Warnings are problems that do not stop a run, as "path:line: msg".
	Warnings []Problem
	// graph holds the same DAG for drawing (plan --format dot), built on
	// first use: it is a third of a 10k-phase parse's time and memory, and
	// a run, which re-parses on every manifest edit, never draws.
	graphOnce sync.Once
	graph     graph.Graph[string, *Node]
}

// Options tunes validation.
type Options struct {
	// RequireDocs makes a phase without a doc an error, as `run` needs.
	RequireDocs bool
	// External accepts deps that are not phases of this manifest but
	// nodes someone else tracks (GitHub issues "#12" in queue mode).
	External func(id string) bool
	// MidRename takes a phase that has both X and DONE_X for done rather
	// than an error: what the folder holds for a moment while the driver
	// lands the phase (the checkout gets DONE_X before X goes). For the
	// views (status, explain, logs), which read it at any moment.
	MidRename bool
}

// IsIssueRef reports whether id names a GitHub issue: "#" and digits.
func IsIssueRef(id string) bool {
	if len(id) < 2 || id[0] != '#' {
		return false
	}
	for _, c := range id[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Node returns the phase with the given id, or nil.
func (r *Roadmap) Node(id string) *Node { return r.byID[id] }

// Deps returns the phases n depends on, in the order written.
func (r *Roadmap) Deps(n *Node) []*Node { return r.nodes(n.deps) }

// Dependents returns the phases that depend on n.
func (r *Roadmap) Dependents(n *Node) []*Node { return r.nodes(n.dependents) }

func (r *Roadmap) nodes(idx []int) []*Node {
	out := make([]*Node, len(idx))
	for i, j := range idx {
		out[i] = r.Nodes[j]
	}
	return out
}

// Load reads dir/EXECUTION-MANIFEST.md and the phase docs beside it and
// validates the whole roadmap. Every problem is reported at once in an
// *InvalidError.
func Load(dir string, opt Options) (*Roadmap, error) {
	path := filepath.Join(dir, ManifestName)
	src, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &InvalidError{Path: path, Problems: []Problem{{Msg: "manifest not found: pass the roadmap folder, or create one (see docs/manifest.md)"}}}
		}
		return nil, &InvalidError{Path: path, Problems: []Problem{{Msg: err.Error()}}}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read roadmap folder: %w", err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() {
			files = append(files, e.Name())
		}
	}
	return Parse(dir, src, files, opt)
}

// Parse validates manifest bytes against the given doc file names (the
// folder listing). It does no I/O, so callers can validate a manifest read
// from a git tree or an edited buffer.
func Parse(dir string, src []byte, files []string, opt Options) (*Roadmap, error) {
	path := filepath.Join(dir, ManifestName)
	bad := &InvalidError{Path: path}
	m, perr := manifest.Parse(src)
	var list manifest.ErrorList
	if errors.As(perr, &list) {
		for _, e := range list {
			bad.add(e.Line, e.Msg)
		}
	} else if perr != nil {
		bad.add(0, perr.Error())
	}
	if m == nil {
		return nil, bad
	}
	r := &Roadmap{Dir: dir, ManifestPath: path, Manifest: m, byID: make(map[string]*Node, len(m.Phases))}
	if len(m.Phases) == 0 && len(bad.Problems) == 0 {
		bad.add(1, `no phases found: a phase is a list item like "1. [pending] **phase-01** — title (deps: none)"`)
	}
	for i := range m.Phases {
		p := m.Phases[i]
		if prev, dup := r.byID[p.ID]; dup {
			bad.add(p.Line, fmt.Sprintf("duplicate phase id %q (first at line %d)", p.ID, prev.Line))
			continue
		}
		n := &Node{Phase: p, Index: len(r.Nodes)}
		r.Nodes = append(r.Nodes, n)
		r.byID[p.ID] = n
	}
	for _, n := range r.Nodes {
		seen := make(map[string]bool, len(n.Deps))
		for _, d := range n.Deps {
			switch dep := r.byID[d]; {
			case d == n.ID:
				bad.add(n.Line, fmt.Sprintf("phase %s depends on itself", n.ID))
			case dep == nil && n.State == manifest.Merged:
				// A merged phase's deps are history: they cannot hold up
				// anything, so an entry since removed from the list is
				// worth a warning, not a refusal.
				r.Warnings = append(r.Warnings, Problem{Line: n.Line, Msg: fmt.Sprintf("merged phase %s lists unknown phase %q; ignored", n.ID, d)})
			case dep == nil && opt.External != nil && opt.External(d):
				if !seen[d] {
					n.External = append(n.External, d)
				}
			case dep == nil && IsIssueRef(d):
				bad.add(n.Line, fmt.Sprintf("phase %s depends on issue %s, which only queue mode knows: run with --issues (or `claudopilot queue`)", n.ID, d))
			case dep == nil:
				msg := fmt.Sprintf("phase %s depends on unknown phase %q", n.ID, d)
				if c := Closest(d, r.ids()); c != "" {
					msg += fmt.Sprintf(" (did you mean %s?)", c)
				}
				bad.add(n.Line, msg)
			case seen[d]:
				// A repeated dep is harmless; one edge is enough.
			default:
				n.deps = append(n.deps, dep.Index)
				dep.dependents = append(dep.dependents, n.Index)
			}
			seen[d] = true
		}
	}
	cycles, lines := r.cycleErrors()
	for i, c := range cycles {
		bad.Problems = append(bad.Problems, Problem{Line: lines[i], Msg: c.Error(), Err: c})
	}
	attachDocs(r, files)
	for _, n := range r.Nodes {
		if n.Doc == "" && opt.RequireDocs {
			bad.add(n.Line, fmt.Sprintf("phase %s has no doc: create %s.md or %s-<slug>.md in %s", n.ID, n.ID, n.ID, dir))
		}
	}
	r.docProblems(files, opt.MidRename, bad)
	if len(bad.Problems) > 0 {
		bad.sort()
		return r, bad
	}
	return r, nil
}

// ids lists the phase ids in manifest order.
func (r *Roadmap) ids() []string {
	out := make([]string, len(r.Nodes))
	for i, n := range r.Nodes {
		out[i] = n.ID
	}
	return out
}

// Graph returns the DAG as a dominikbraun/graph graph, for drawing and for
// callers that want the library's algorithms. Its PreventCycles and
// TopologicalSort are super-linear: this package never calls them.
func (r *Roadmap) Graph() graph.Graph[string, *Node] {
	r.graphOnce.Do(func() { r.graph = r.buildGraph() })
	return r.graph
}

func (r *Roadmap) buildGraph() graph.Graph[string, *Node] {
	g := graph.New(func(n *Node) string { return n.ID }, graph.Directed(), graph.Acyclic())
	for _, n := range r.Nodes {
		_ = g.AddVertex(n) // ids are unique by now
	}
	for _, n := range r.Nodes {
		for _, d := range n.deps {
			_ = g.AddEdge(r.Nodes[d].ID, n.ID)
		}
	}
	return g
}

// Weight is a phase's share of work for critical paths: its estimate when
// the roadmap carries any, else one phase.
func (r *Roadmap) weights() ([]time.Duration, bool) {
	var sum time.Duration
	var k int
	for _, n := range r.Nodes {
		if n.Est > 0 {
			sum += n.Est
			k++
		}
	}
	w := make([]time.Duration, len(r.Nodes))
	if k == 0 {
		for i := range w {
			w[i] = 1
		}
		return w, false
	}
	// Phases without an estimate count as an average one, so a single
	// missing estimate does not make a long chain look free.
	avg := sum / time.Duration(k)
	for i, n := range r.Nodes {
		w[i] = n.Est
		if w[i] == 0 {
			w[i] = avg
		}
	}
	return w, true
}

var annotation = regexp.MustCompile(`\s*\((deps|owns|gate|est):[^)]*\)`)

// CleanTitle drops the (deps: …)-style annotations from a title, for commit
// messages and displays.
func CleanTitle(t string) string {
	return strings.TrimSpace(annotation.ReplaceAllString(t, ""))
}
