package land

import (
	"errors"
	"path"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/protect"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
)

// errNoProtectedSet stops a landing whose Owner was given no protected
// set: the check cannot run, so nothing lands (it fails closed).
var errNoProtectedSet = errors.New("the protected-file check has no set of files to check (PROTECTED_PATHS=none turns it off)")

// protected lists the protected files (package protect, o.Protect) that
// j's branch changes, changed being what it changed since its merge base
// with the base, and that the phase may not change: those its (owns: …)
// names, its own doc and its DONE_ rename are its own, and so is the
// manifest, which the landing replaces with the base's plus the phase's
// flip (build). manifestSrc is the manifest on the base, whose phases
// say which doc is whose (the longest id wins, as for the roadmap).
func (o *Owner) protected(j scheduler.MergeJob, changed []string, manifestSrc []byte) ([]protect.Hit, error) {
	if o.Protect == nil {
		return nil, errNoProtectedSet
	}
	if o.Protect.Off {
		return nil, nil
	}
	ids := map[string]bool{j.ID: true}
	if m, _ := manifest.Parse(manifestSrc); m != nil {
		for _, p := range m.Phases {
			ids[p.ID] = true
		}
	}
	rdir := path.Clean(o.Layout.RoadmapRel)
	own := func(p string) bool {
		if p == o.Layout.ManifestRel() || InScope(p, j.Owns) {
			return true
		}
		if path.Dir(p) != rdir {
			return false
		}
		id, _ := roadmap.DocOwner(path.Base(p), func(id string) bool { return ids[id] })
		return id == j.ID
	}
	return o.Protect.Check(changed, own), nil
}
