package roadmap

import (
	"fmt"

	"github.com/claudopilot/claudopilot/manifest"
)

// With returns the graph of r's phases and the given outside nodes (the
// issues a queue offers) together, so one scheduler decides for both. An
// outside node is a Phase without a line (its ID, Title, Deps, Owns, Gate
// and Lane count). A phase's outside dep ("#12") that names one of them
// becomes an edge; a dep of an outside node that names neither a phase nor
// another outside node stays External. r is not changed: its nodes are
// copied.
func (r *Roadmap) With(outside []manifest.Phase) (*Roadmap, error) {
	c := &Roadmap{Dir: r.Dir, ManifestPath: r.ManifestPath, Manifest: r.Manifest, Warnings: r.Warnings,
		byID: make(map[string]*Node, len(r.Nodes)+len(outside))}
	add := func(n *Node) error {
		if _, dup := c.byID[n.ID]; dup {
			return fmt.Errorf("outside node %s: the id is taken", n.ID)
		}
		n.Index = len(c.Nodes)
		c.Nodes = append(c.Nodes, n)
		c.byID[n.ID] = n
		return nil
	}
	for _, n := range r.Nodes {
		_ = add(&Node{Phase: n.Phase, Doc: n.Doc, Done: n.Done}) // ids are unique in r
	}
	for _, p := range outside {
		p.Line, p.State = 0, manifest.Pending
		if err := add(&Node{Phase: p, Outside: true}); err != nil {
			return nil, err
		}
	}
	for i, n := range c.Nodes {
		deps := n.Deps
		if !n.Outside {
			// A phase's edges stay as r has them; its outside deps that
			// are nodes now become edges too.
			old := r.Nodes[i]
			for _, d := range old.deps {
				c.edge(n, c.byID[r.Nodes[d].ID])
			}
			deps = old.External
		}
		for _, d := range deps {
			switch dep := c.byID[d]; {
			case dep == n:
				return nil, fmt.Errorf("%s depends on itself", n.ID)
			case dep != nil && (n.Outside || dep.Outside):
				c.edge(n, dep)
			case dep == nil && !contains(n.External, d):
				n.External = append(n.External, d)
			}
		}
	}
	if cs, _ := c.cycleErrors(); len(cs) > 0 {
		return nil, cs[0]
	}
	return c, nil
}

// edge makes n depend on dep, once.
func (r *Roadmap) edge(n, dep *Node) {
	for _, d := range n.deps {
		if d == dep.Index {
			return
		}
	}
	n.deps = append(n.deps, dep.Index)
	dep.dependents = append(dep.dependents, n.Index)
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Empty is a roadmap without phases, for a queue run without a manifest:
// every node it schedules comes from outside (With).
func Empty(dir string) *Roadmap {
	return &Roadmap{Dir: dir, Manifest: &manifest.Manifest{}, byID: map[string]*Node{}}
}
