package settings

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/claudopilot/claudopilot/roadmap"
)

// V0PromptDir is Claudopilot v0.x's prompt folder, from the repository's
// top: its worker.md was PROMPT_FILE's default, its supervisor.md
// SUPERVISOR_PROMPT_FILE's.
const V0PromptDir = "claudopilot/prompts"

// RoadmapDir is the roadmap folder ROADMAP_DIR or MANIFEST names (from
// the environment, then the settings files under top), absolute; "" when
// neither is set. A command given a folder uses that one instead.
func RoadmapDir(env map[string]string, top string) (string, error) {
	s := &Settings{vals: map[string]Value{}}
	files, _, _, _ := readFiles(top, env)
	for _, k := range placeKnobs()[:2] {
		v, _, _ := pick(k, Input{Env: env, Top: top}, files)
		s.vals[k.Env] = v
	}
	s.RoadmapDir, s.Manifest = s.vals["ROADMAP_DIR"].Raw, s.vals["MANIFEST"].Raw
	dir, probs := s.roadmapDir(top)
	if len(probs) > 0 {
		return "", &Error{Problems: probs}
	}
	return dir, nil
}

// roadmapDir applies ROADMAP_DIR and MANIFEST: relative to the top, and
// MANIFEST must be a folder's EXECUTION-MANIFEST.md, the same folder as
// ROADMAP_DIR's when both are set.
func (s *Settings) roadmapDir(top string) (string, []Problem) {
	abs := func(p string) string {
		if !filepath.IsAbs(p) {
			p = filepath.Join(top, p)
		}
		return filepath.Clean(p)
	}
	var dir string
	var probs []Problem
	if d := strings.TrimSpace(s.RoadmapDir); d != "" {
		dir = abs(d)
	}
	if m := strings.TrimSpace(s.Manifest); m != "" {
		v := s.vals["MANIFEST"]
		switch mdir := filepath.Dir(abs(m)); {
		case filepath.Base(m) != roadmap.ManifestName:
			probs = append(probs, Problem{Key: "MANIFEST", Val: v.Raw, Src: v.Src, Msg: "the manifest is a roadmap folder's " + roadmap.ManifestName + ": name the file so, and its folder holds the phase docs"})
		case dir != "" && dir != mdir:
			w := s.vals["ROADMAP_DIR"]
			probs = append(probs, Problem{Key: "MANIFEST", Val: v.Raw, Src: v.Src, Msg: fmt.Sprintf("names another folder than ROADMAP_DIR=%q (from %s): keep one", w.Raw, w.Src)})
		default:
			dir = mdir
		}
	}
	return dir, probs
}

// derivePlaces makes the prompt files absolute (from the top) and checks
// they exist, finds ROADMAP_DIR's and MANIFEST's folder, and notes a
// Claudopilot v0.x prompt folder that is read.
func (s *Settings) derivePlaces(top string) []Problem {
	_, probs := s.roadmapDir(top)
	pf := &s.PromptFiles
	for _, f := range []struct {
		env string
		p   *string
	}{{"PROMPT_FILE", &pf.Worker}, {"SUPERVISOR_PROMPT_FILE", &pf.Supervisor}, {"WORKER_PROJECT_PROMPT", &pf.WorkerProject}, {"SUPERVISOR_PROJECT_PROMPT", &pf.SupervisorProject}} {
		v := strings.TrimSpace(*f.p)
		if v == "" {
			continue
		}
		if !filepath.IsAbs(v) {
			if top == "" {
				continue
			}
			v = filepath.Join(top, v)
		}
		if _, err := os.Stat(v); err != nil {
			val := s.vals[f.env]
			probs = append(probs, Problem{Key: f.env, Val: val.Raw, Src: val.Src, Msg: err.Error()})
			continue
		}
		*f.p = filepath.Clean(v)
	}
	if top == "" {
		return probs
	}
	s.V0Prompts = filepath.Join(top, filepath.FromSlash(V0PromptDir))
	for _, role := range []struct{ file, setting, set string }{{"worker.md", "PROMPT_FILE", pf.Worker}, {"supervisor.md", "SUPERVISOR_PROMPT_FILE", pf.Supervisor}} {
		if _, err := os.Stat(filepath.Join(s.V0Prompts, role.file)); err != nil || role.set != "" {
			continue
		}
		rel := V0PromptDir + "/" + role.file
		s.Notes = append(s.Notes, Note{Where: rel, Key: role.setting + "'s default", Tool: "Claudopilot v0.x",
			ReadAs: fmt.Sprintf("the %s prompt unless <roadmap>/prompts/ or .claudopilot/prompts/ has a %s (the phase and the contract are appended, as v0.x did)", strings.TrimSuffix(role.file, ".md"), role.file)})
	}
	return probs
}
