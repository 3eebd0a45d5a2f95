package engine

import (
	"context"
	"fmt"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// Retry flips ids (and, with all, every [blocked] phase) back to
// [pending], with the dependents parked only because they waited on one of
// them. It returns what it flipped and the ids already [pending]. The
// command and the web page's retry button both use it.
func Retry(ctx context.Context, dir string, ids []string, all bool) (done, already []string, err error) {
	rm, err := roadmap.Load(dir, roadmap.Options{})
	if err != nil {
		return nil, nil, err
	}
	var want []*roadmap.Node
	for _, id := range ids {
		n := rm.Node(id)
		if n == nil {
			return nil, nil, fmt.Errorf("retry: no phase %q in %s", id, rm.ManifestPath)
		}
		if n.State == manifest.Pending {
			already = append(already, id)
			continue
		}
		if n.State != manifest.Blocked && n.State != manifest.Failed {
			return nil, nil, fmt.Errorf("retry: phase %s is [%s]; only [blocked] or [failed] phases can be retried", id, n.State)
		}
		want = append(want, n)
	}
	if all {
		for _, n := range rm.Nodes {
			if n.State == manifest.Blocked {
				want = append(want, n)
			}
		}
	}
	// Dependents parked with "waits on <id>" come back with it.
	waits := map[string]string{}
	if c, err := worktree.Open(ctx, dir, nil); err == nil {
		top := c.Dir
		recs, _ := state.ReadJournal(state.Layout{Top: top}.JournalPath())
		hist, _ := state.History(recs)
		for id, h := range hist {
			if h.Last == "blocked" && h.WaitsOn != "" {
				waits[id] = h.WaitsOn
			}
		}
	}
	seen := map[string]bool{}
	for i := 0; i < len(want); i++ {
		seen[want[i].ID] = true
		for _, d := range rm.Dependents(want[i]) {
			if d.State == manifest.Blocked && waits[d.ID] != "" && !seen[d.ID] {
				want = append(want, d)
				seen[d.ID] = true
			}
		}
	}
	f := roadmap.NewFile(rm.ManifestPath)
	for _, n := range want {
		if err := f.SetState(n.ID, manifest.Pending); err != nil {
			return nil, nil, err
		}
		done = append(done, n.ID)
	}
	return done, already, nil
}
