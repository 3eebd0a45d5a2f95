package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
)

func cmdRetry(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "retry", "retry ID... [--roadmap DIR] | retry --all-blocked", `
Flip [blocked] or [failed] phases back to [pending], so the next run (or the
run going on now, which watches the manifest) tries them again. The kept
branch and worktree are reused, brought up to date with the base first, and
the attempt counters start over. Phases parked only because they waited on
a retried phase are flipped back too.

Only the state tokens change; every other byte of the manifest stays.`,
		"  claudopilot retry phase-03\n  claudopilot retry --all-blocked --roadmap plans/q3")
	dirFlag := fs.String("roadmap", "", "the roadmap folder (default: ./roadmap, else ./.claudopilot/roadmap)")
	all := fs.Bool("all-blocked", false, "retry every [blocked] phase")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 && !*all {
		return usageErrorf("retry: name the phases to retry, or pass --all-blocked")
	}
	dir, err := findRoadmapDir(ctx, a, *dirFlag)
	if err != nil {
		return err
	}
	rm, err := roadmap.Load(dir, roadmap.Options{})
	if err != nil {
		return err
	}
	var want []*roadmap.Node
	already := 0
	for _, id := range fs.Args() {
		n := rm.Node(id)
		if n == nil {
			return fmt.Errorf("retry: no phase %q in %s", id, rm.ManifestPath)
		}
		if n.State == manifest.Pending {
			// Flipped by hand already, as the docs invite: what retry
			// would do is done.
			fmt.Fprintf(a.s.Out, "%s is already [pending]: the next run starts it (a kept branch is brought up to date first)\n", id)
			already++
			continue
		}
		if n.State != manifest.Blocked && n.State != manifest.Failed {
			return fmt.Errorf("retry: phase %s is [%s]; only [blocked] or [failed] phases can be retried", id, n.State)
		}
		want = append(want, n)
	}
	if *all {
		for _, n := range rm.Nodes {
			if n.State == manifest.Blocked {
				want = append(want, n)
			}
		}
	}
	// Dependents parked with "waits on <id>" come back with it.
	waits := map[string]string{}
	if top, err := gitTopLevel(ctx, dir); err == nil {
		recs, _ := scheduler.ReadJournal(scheduler.Layout{Top: top}.JournalPath())
		hist, _ := scheduler.History(recs)
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
	var done []string
	for _, n := range want {
		if err := f.SetState(n.ID, manifest.Pending); err != nil {
			return err
		}
		done = append(done, n.ID)
	}
	if len(done) == 0 {
		if already == 0 {
			fmt.Fprintln(a.s.Out, "nothing to retry: no phase is [blocked]")
		}
		return nil
	}
	rel, _ := filepath.Rel(a.cwd, rm.ManifestPath)
	fmt.Fprintf(a.s.Out, "retrying %s (now [pending] in %s)\n", strings.Join(done, ", "), rel)
	return nil
}
