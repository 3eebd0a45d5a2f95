package land

import (
	"context"
	"sync"

	"github.com/claudopilot/claudopilot/scheduler"
)

// predictCache keeps merge-tree answers by the pair of commits, so a
// prediction only dry-runs the pairs where a branch got new commits.
type predictCache struct {
	mu    sync.Mutex
	pairs map[[2]string][]string // (ours, theirs) -> conflicting paths
}

// Predict dry-runs, with git merge-tree (no checkout, no index), the merge
// of every running phase's branch with each independent running branch
// and with the base, and returns the conflicts. A pair whose tips did not
// change since the last call is answered from the cache; the manifest,
// which every merge replaces, is no conflict. Each dry run costs about
// what one merge-tree of the landing does (BENCHMARKS.md section 6).
func (o *Owner) Predict(ctx context.Context, running []string, independent func(a, b string) bool) []scheduler.Conflict {
	base, err := o.Git.RevParse(ctx, "refs/heads/"+o.Layout.Base)
	if err != nil {
		return nil
	}
	tips := map[string]string{}
	var ids []string
	for _, id := range running {
		tip, err := o.Git.RevParse(ctx, "refs/heads/"+o.Layout.Branch(id))
		if err != nil || tip == base {
			continue // no branch yet, or nothing on it
		}
		tips[id] = tip
		ids = append(ids, id)
	}
	var out []scheduler.Conflict
	try := func(a, b string) []string {
		k := [2]string{a, b}
		o.pred.mu.Lock()
		paths, ok := o.pred.pairs[k]
		o.pred.mu.Unlock()
		if ok {
			return paths
		}
		_, conflicts, err := o.Git.MergeTree(ctx, a, b)
		if err != nil {
			return nil // not cached: tried again next time
		}
		paths = without(conflicts, []string{o.Layout.ManifestRel()})
		o.pred.mu.Lock()
		if o.pred.pairs == nil || len(o.pred.pairs) > 4096 {
			o.pred.pairs = map[[2]string][]string{}
		}
		o.pred.pairs[k] = paths
		o.pred.mu.Unlock()
		return paths
	}
	for i, a := range ids {
		if ctx.Err() != nil {
			return out
		}
		if paths := try(base, tips[a]); len(paths) > 0 {
			out = append(out, scheduler.Conflict{A: a, Paths: paths})
		}
		for _, b := range ids[i+1:] {
			// Two branches at one commit (both with nothing of their
			// own on an earlier base) merge without a conflict: no
			// merge-tree is asked (issue 25 §1).
			if !independent(a, b) || tips[a] == tips[b] {
				continue
			}
			if paths := try(tips[a], tips[b]); len(paths) > 0 {
				out = append(out, scheduler.Conflict{A: a, B: b, Paths: paths})
			}
		}
	}
	return out
}
