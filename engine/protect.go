package engine

import (
	"os"
	"path/filepath"

	"github.com/claudopilot/claudopilot/control"
	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/prompts"
	"github.com/claudopilot/claudopilot/protect"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scanner"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// protectedSet composes the files no landing may change (package protect,
// docs/landing.md): what each reader of the driver declares, the most
// specific first (the first rule a path matches says why it is
// protected), with the settings' part, which the command line resolves:
// the files the settings model reads and PROTECTED_PATHS (settings.Off:
// PROTECTED_PATHS=none). rm is the roadmap, nil for a queue alone; ps
// the prompt loaders' folders. A new reader of the repository's files
// adds its rules here; the landings need no change. Without the
// settings' part (a zero Set: it always names the settings files) it
// returns nil, and the landings fail closed.
func protectedSet(settings protect.Set, l state.Layout, rm *roadmap.Roadmap, ps ...prompts.Set) *protect.Set {
	if !settings.Off && len(settings.Rules) == 0 {
		return nil
	}
	var rules []protect.Rule
	for _, p := range ps {
		rules = append(rules, p.Protected(l.Top)...)
	}
	rules = append(rules, control.Protected(l.Top, l.StateDir())...)
	rules = append(rules, scanner.Protected()...)
	rules = append(rules, issues.CampaignProtected()...)
	if rm != nil {
		rules = append(rules, rm.Protected(l.RoadmapRel, l.Manifest)...)
	}
	rules = append(rules, settings.Rules...)
	rules = append(rules, l.Protected()...)
	rules = append(rules, worktree.Protected()...)
	return &protect.Set{Off: settings.Off, Rules: rules}
}

// queueProtected is the set an issue's branch is checked against before
// it is pushed: the run's, with the queue's prompt folders; a queue alone
// protects the roadmap a later run reads by default.
func (e *Engine) queueProtected(o Options, promptDirs []string) *protect.Set {
	ps := e.Settings.promptSet(promptDirs)
	if !o.NoRoadmap {
		return protectedSet(e.Settings.Protect, e.Layout, e.Roadmap, ps)
	}
	rm, rps, l := defaultRoadmap(e.Git.Dir)
	return protectedSet(e.Settings.Protect, l, rm, ps, rps)
}

// defaultRoadmap is what a queue alone protects of the roadmap a later
// `claudopilot run` reads by default (./roadmap: its manifest, docs and
// prompt overrides), when the clone has one.
func defaultRoadmap(top string) (*roadmap.Roadmap, prompts.Set, state.Layout) {
	l := state.Layout{Top: top, RoadmapRel: "roadmap"}
	dir := filepath.Join(top, "roadmap")
	if _, err := os.Stat(filepath.Join(dir, roadmap.ManifestName)); err != nil {
		return nil, prompts.Set{}, l
	}
	return &roadmap.Roadmap{Dir: dir}, prompts.Set{Dirs: []string{filepath.Join(dir, "prompts")}}, l
}
