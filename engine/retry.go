package engine

import (
	"context"
	"fmt"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// OutsideRetryError is a retry of a node from outside the manifest (an
// issue, "#12"): no manifest line holds its state, so retry cannot flip it.
// Its state is kept on GitHub, in its labels: that is where it is retried.
type OutsideRetryError struct{ ID string }

func (e *OutsideRetryError) Error() string {
	return fmt.Sprintf("retry: %s is an issue, not a phase of the manifest: it is retried on GitHub, by its labels", e.ID)
}

// Retry flips ids (and, with all, every [blocked] phase) back to
// [pending], with the dependents parked only because they waited on one of
// them. It returns what it flipped and the ids already [pending]. An id
// from outside the manifest ("#12") changes nothing: *OutsideRetryError. The
// command and the web page's retry button both use it.
func Retry(ctx context.Context, dir string, ids []string, all bool) (done, already []string, err error) {
	// Deps on issues ("#12") load: a roadmap run with --issues parks
	// phases too.
	rm, err := roadmap.Load(dir, roadmap.Options{External: roadmap.IsIssueRef})
	if err != nil {
		return nil, nil, err
	}
	for _, id := range ids {
		if rm.Node(id) == nil && roadmap.IsIssueRef(id) {
			return nil, nil, &OutsideRetryError{ID: id}
		}
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
