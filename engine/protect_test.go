package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/prompts"
	"github.com/claudopilot/claudopilot/protect"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/state"
)

// The composed set protects what every reader reads, each path named with
// the reader that reads it (the most specific first), and the settings'
// part as given; without the settings' part there is no set, and the
// landings fail closed.
func TestProtectedSetDeclaresEveryReader(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	l := state.Layout{Top: top, RoadmapRel: "plan", Base: "main"}
	rm := &roadmap.Roadmap{Dir: filepath.Join(top, "plan")}
	ps := prompts.Set{Dirs: []string{filepath.Join(top, "plan", "prompts"), filepath.Join(l.Dir(), "prompts")}}
	settings := protect.Set{Rules: []protect.Rule{{Glob: "claudopilot.config", Why: "a settings file"}, {Glob: "ci/**", Why: "named in PROTECTED_PATHS"}}}
	s := protectedSet(settings, l, rm, ps)
	for path, why := range map[string]string{
		"claudopilot.config":               "a settings file",
		"ci/deploy.yml":                    "PROTECTED_PATHS",
		"plan/prompts/worker.md":           "prompt override",
		".claudopilot/prompts/reviewer.md": "prompt override",
		".claudopilot/state/control.json":  "control file",
		".claudopilot/config.json":         "driver's folder",
		"plan/EXECUTION-MANIFEST.md":       "the manifest",
		"plan/p9.md":                       "phase doc",
		"src/.gitattributes":               "read by git",
		".gitmodules":                      "read by git",
		"claudopilot/scanners/bugs.md":     "scanner",
		"claudopilot/scanners/CONTEXT.md":  "scanner",
		"claudopilot/campaigns/speed.md":   "campaign's goal file",
	} {
		hits := s.Check([]string{path}, nil)
		if len(hits) != 1 || !strings.Contains(hits[0].Why, why) {
			t.Errorf("%s: %v, want one hit saying %q", path, hits, why)
		}
	}
	if hits := s.Check([]string{"src/main.go", "README.md", "plan/notes/x.txt"}, nil); len(hits) != 0 {
		t.Errorf("the work itself is protected: %v", hits)
	}
	settings.Off = true
	if s := protectedSet(settings, l, rm, ps); !s.Off {
		t.Error("PROTECTED_PATHS=none did not turn the set off")
	}
	if s := protectedSet(protect.Set{}, l, rm, ps); s != nil {
		t.Errorf("no settings' part gave %v", s)
	}
}

// A queue alone protects the default roadmap a later run reads, when the
// clone has one.
func TestDefaultRoadmapIsProtected(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	if rm, _, _ := defaultRoadmap(top); rm != nil {
		t.Fatal("a roadmap without ./roadmap")
	}
	if err := os.MkdirAll(filepath.Join(top, "roadmap"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(top, "roadmap", roadmap.ManifestName), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	rm, ps, l := defaultRoadmap(top)
	s := protectedSet(protect.Set{Rules: []protect.Rule{{Glob: "claudopilot.config", Why: "a settings file"}}}, l, rm, ps)
	for _, p := range []string{"roadmap/EXECUTION-MANIFEST.md", "roadmap/phase-01.md", "roadmap/prompts/worker.md"} {
		if len(s.Check([]string{p}, nil)) != 1 {
			t.Errorf("%s is not protected", p)
		}
	}
}
