package issues

import (
	"fmt"
	"os"
	"slices"
	"sort"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
)

// Phase is one manifest phase as the issue graph sees it: issues may
// depend on it ("Depends on phase-03"), and it may depend on issues
// ("(deps: #12)"), which is how cycles across both are found.
type Phase struct {
	ID     string
	Deps   []string // phase ids and "#N" issue ids
	Merged bool
}

// PhasesFromManifest reads the phases of a manifest file. A missing file
// is no phases and no error.
func PhasesFromManifest(path string) ([]Phase, error) {
	src, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	m, err := manifest.Parse(src)
	if m == nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make([]Phase, 0, len(m.Phases))
	for _, p := range m.Phases {
		out = append(out, Phase{ID: p.ID, Deps: append([]string(nil), p.Deps...), Merged: p.State == manifest.Merged})
	}
	return out, nil
}

// graphNode is one queued issue and what its body declares.
type graphNode struct {
	N    int
	Deps Deps
}

// graphProblems validates the queue's graph: the queued issues, the
// manifest phases (may be none), and the other issues the deps name
// (exists tells whether such an issue exists at all). It returns, per
// issue, why its deps are invalid: itself, an issue that does not exist,
// an unknown phase, or a dependency cycle (through issues and phases),
// worded as for the manifest.
func graphProblems(nodes []graphNode, phases []Phase, exists map[int]bool) map[int][]string {
	probs := map[int][]string{}
	inGraph := map[int]bool{}
	for _, nd := range nodes {
		inGraph[nd.N] = true
	}
	phase := map[string]*Phase{}
	for i := range phases {
		phase[phases[i].ID] = &phases[i]
	}
	edges := map[string][]string{}
	for _, nd := range nodes {
		id := IssueID(nd.N)
		for _, d := range nd.Deps.Issues {
			switch {
			case d == nd.N:
				probs[nd.N] = append(probs[nd.N], fmt.Sprintf("issue %s depends on itself", id))
			case inGraph[d]:
				edges[id] = append(edges[id], IssueID(d))
			case !exists[d]:
				probs[nd.N] = append(probs[nd.N], fmt.Sprintf("issue %s depends on unknown issue %q", id, IssueID(d)))
			}
		}
		for _, p := range nd.Deps.Phases {
			if phase[p] == nil {
				msg := fmt.Sprintf("issue %s depends on unknown phase %q", id, p)
				if len(phases) == 0 {
					msg += " (no roadmap is loaded)"
				}
				probs[nd.N] = append(probs[nd.N], msg)
				continue
			}
			edges[id] = append(edges[id], p)
		}
	}
	if len(edges) == 0 {
		return probs
	}
	// Cycles: the roadmap's own check, so they are found and worded
	// exactly as for a manifest.
	var ids []string
	deps := map[string][]string{}
	for _, nd := range nodes {
		id := IssueID(nd.N)
		ids, deps[id] = append(ids, id), edges[id]
	}
	for _, p := range phases {
		ids, deps[p.ID] = append(ids, p.ID), p.Deps
	}
	for _, c := range roadmap.Cycles(ids, func(id string) []string { return deps[id] }) {
		msg := c.Error()
		for _, id := range c.Path {
			if n, ok := ParseIssueID(id); ok && inGraph[n] && !slices.Contains(probs[n], msg) {
				probs[n] = append(probs[n], msg)
			}
		}
	}
	for n := range probs {
		sort.Strings(probs[n])
	}
	return probs
}
