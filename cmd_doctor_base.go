package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/claudopilot/claudopilot/land"
)

// checkBaseCheckout looks at the checkout of the base branch, where merges
// land: a move after a merge that did not finish, and uncommitted changes
// a merge may have to wait for.
func (d *doctorState) checkBaseCheckout(ctx context.Context) {
	if d.git == nil || d.base == "" {
		return
	}
	layout := d.layout
	if layout.Top == "" {
		layout.Top = d.git.Dir
	}
	if mv, err := land.Pending(layout); err != nil {
		d.add(doctorWarn, fmt.Sprintf("base checkout: %v", err), "")
	} else if mv != nil {
		d.add(doctorWarn, fmt.Sprintf("base checkout %s has not followed %s to %s yet: a merge's move of it is pending", d.rel(mv.Dir), d.base, short(mv.New)),
			"the next `claudopilot run` (or the run going on, before its next merge) finishes it; do not commit there until then")
		return // its status shows the move's own changes until then
	}
	dir, ok, err := d.git.WorktreeOf(ctx, d.base)
	if err != nil || !ok {
		return
	}
	dirty, err := d.git.Dirty(ctx, dir)
	if err != nil {
		d.add(doctorWarn, fmt.Sprintf("base checkout: %v", err), "")
		return
	}
	dirty = dropPath(dirty, layout.ManifestRel()) // the driver writes states there itself
	if len(dirty) == 0 {
		d.add(doctorOK, fmt.Sprintf("base checkout %s is clean", d.rel(dir)), "")
		return
	}
	shown := dirty
	if len(shown) > 5 {
		shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(dirty)-5))
	}
	d.add(doctorWarn, fmt.Sprintf("base checkout %s has uncommitted changes: %s", d.rel(dir), strings.Join(shown, ", ")),
		"a merge that changes these files waits until they are committed, stashed or reverted there")
}

// dropPath drops p, and the driver's own folder, from paths.
func dropPath(paths []string, p string) []string {
	var out []string
	for _, q := range paths {
		if q != p && !strings.HasPrefix(q, ".claudopilot/") {
			out = append(out, q)
		}
	}
	return out
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
