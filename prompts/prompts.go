package prompts

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"text/template"

	"github.com/claudopilot/claudopilot/protect"
)

//go:embed worker.md supervisor.md issue-worker.md issue-supervisor.md reviewer.md
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
}

// Render renders the template <name>.md ("worker" and "supervisor" for
// roadmap phases with Data, "issue-worker" and "issue-supervisor" for the
// issue queue with its own data). An optional <name>.project.md in an
// override folder is appended.
func (s Set) Render(role string, d any) ([]byte, error) {
	name := role + ".md"
	src, err := s.load(name)
	if err != nil {
		return nil, err
	}
	t, err := template.New(name).Option("missingkey=error").Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("prompt %s: %w", name, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return nil, fmt.Errorf("prompt %s: %w", name, err)
	}
	for _, dir := range s.Dirs {
		extra, err := os.ReadFile(filepath.Join(dir, role+".project.md"))
		if err == nil {
			b.WriteString("\n")
			b.Write(extra)
			break
		}
	}
	return b.Bytes(), nil
}

func (s Set) load(name string) ([]byte, error) {
	for _, dir := range s.Dirs {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("prompt override: %w", err)
		}
	}
	return builtin.ReadFile(name)
}

// Protected declares the override folders for the landing's check
// (package protect): every file in them, not only the names read today
// (<role>.md, <role>.project.md), so a role added later is covered. top
// is the repository's top level; a folder outside it is not the
// repository's to protect.
func (s Set) Protected(top string) []protect.Rule {
	var rules []protect.Rule
	for _, dir := range s.Dirs {
		rules = append(rules, protect.Under(top, dir, "a prompt override, read by the prompt loader")...)
	}
	return rules
}
