package prompts

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"text/template"

	"github.com/claudopilot/claudopilot/protect"
)

//go:embed worker.md supervisor.md issue-worker.md issue-supervisor.md reviewer.md v0-worker.md v0-supervisor.md
var builtin embed.FS

// Data is what a prompt template can use.
type Data struct {
	ID, Title  string
	Role       string // worker or supervisor
	Attempt    int
	Mode       string // supervisor: standard or best-effort
	Doc        string // the phase doc, relative to the worktree root
	DoneDoc    string // where the doc goes when done
	Manifest   string // the manifest, relative to the worktree root
	Worktree   string
	Branch     string
	Base       string
	Gate       string
	Owns       []string
	Failure    string // supervisor: the failure reason
	FailureLog string // supervisor: a file with the failing log's tail
	Detail     string // supervisor: e.g. conflicting paths
	Findings   string // worker sent back by the review gate: a file with the findings
	// An outside node's (an issue of the queue, templates issue-*.md):
	Number int      // the number
	URL    string   // the page
	Checks []string // supervisor: the failing checks' names
}

// Set renders prompts, looking for overrides in the given folders first
// (in order), then the built-in templates.
type Set struct {
	Dirs []string
	// Files are prompt files the settings name: "worker" and
	// "supervisor" (PROMPT_FILE, SUPERVISOR_PROMPT_FILE) replace the
	// role's prompt before any folder's, and "worker.project" and
	// "supervisor.project" (WORKER_PROJECT_PROMPT, …) are appended.
	Files map[string]string
	// V0 is Claudopilot v0.x's prompt folder (claudopilot/prompts): its
	// worker.md and supervisor.md, and their .project.md, are read after
	// Dirs'.
	V0 string
}

// Claudopilot's prompts (Files' and V0's) are plain text, not templates:
// they are used as written, and the phase and the contract are appended
// to them from the built-in v0-<role>.md, as Claudopilot appended them.

// Render renders the template <name>.md ("worker" and "supervisor" for
// roadmap phases with Data, "issue-worker" and "issue-supervisor" for the
// issue queue with its own data). An optional <name>.project.md in an
// override folder is appended.
func (s Set) Render(role string, d any) ([]byte, error) {
	name := role + ".md"
	src, plain, err := s.load(role)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if plain {
		b.Write(src)
		b.WriteString("\n")
		name = "v0-" + name
		if src, err = builtin.ReadFile(name); err != nil {
			return nil, err
		}
	}
	t, err := template.New(name).Option("missingkey=error").Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("prompt %s: %w", name, err)
	}
	if err := t.Execute(&b, d); err != nil {
		return nil, fmt.Errorf("prompt %s: %w", name, err)
	}
	extra, err := s.project(role)
	if err != nil {
		return nil, err
	}
	if extra != nil {
		b.WriteString("\n")
		b.Write(extra)
	}
	return b.Bytes(), nil
}

// v0Roles are the roles Claudopilot had prompts for.
func v0Role(role string) bool { return role == "worker" || role == "supervisor" }

// load finds role's prompt: a file the settings name, an override
// folder's, Claudopilot v0.x's, or the built-in one. plain is true for
// Claudopilot's prompts, which are not templates.
func (s Set) load(role string) (src []byte, plain bool, err error) {
	if f := s.Files[role]; f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, false, fmt.Errorf("prompt file: %w", err)
		}
		return b, true, nil
	}
	dirs := s.Dirs
	if s.V0 != "" && v0Role(role) {
		dirs = append(slices.Clip(dirs), s.V0)
	}
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, role+".md"))
		if err == nil {
			return b, dir == s.V0, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, false, fmt.Errorf("prompt override: %w", err)
		}
	}
	b, err := builtin.ReadFile(role + ".md")
	return b, false, err
}

// project is what is appended to role's prompt: a file the settings name,
// or the first override folder's <role>.project.md (Claudopilot v0.x's
// folder last); nil for none.
func (s Set) project(role string) ([]byte, error) {
	if f := s.Files[role+".project"]; f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("prompt file: %w", err)
		}
		return b, nil
	}
	dirs := s.Dirs
	if s.V0 != "" && v0Role(role) {
		dirs = append(slices.Clip(dirs), s.V0)
	}
	for _, dir := range dirs {
		if b, err := os.ReadFile(filepath.Join(dir, role+".project.md")); err == nil {
			return b, nil
		}
	}
	return nil, nil
}

// Protected declares the override folders for the landing's check
// (package protect): every file in them, not only the names read today
// (<role>.md, <role>.project.md), so a role added later is covered. top
// is the repository's top level; a folder outside it is not the
// repository's to protect.
func (s Set) Protected(top string) []protect.Rule {
	var rules []protect.Rule
	dirs := s.Dirs
	if s.V0 != "" {
		dirs = append(slices.Clip(dirs), s.V0)
	}
	for _, dir := range dirs {
		rules = append(rules, protect.Under(top, dir, "a prompt override, read by the prompt loader")...)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Files)) {
		rules = append(rules, protect.File(top, s.Files[k], "a prompt file the settings name, read by the prompt loader")...)
	}
	return rules
}
