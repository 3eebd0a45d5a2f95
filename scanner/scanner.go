package scanner

import (
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/claudopilot/claudopilot/internal/lazy"
	"github.com/claudopilot/claudopilot/protect"
)

//go:embed builtin/*.md
var builtin embed.FS

// Dir is the folder, from the repository's top, of the committed scanner
// prompts: <name>.md replaces the built-in scanner of that name or adds
// one; ContextFile is given to every scanner.
const Dir = "claudopilot/scanners"

// ContextFile is the project context every scanner reads, in Dir.
const ContextFile = "CONTEXT.md"

// Scanner is one scanner: its name and its prompt.
type Scanner struct {
	Name   string
	Prompt string
	// From is where the prompt came from: "built in", or the file's path
	// from the repository's top.
	From string
}

// Set is the scanners of a repository, in name order, with the project
// context they all read.
type Set struct {
	Scanners []Scanner
	Context  string // CONTEXT.md ("" none)
}

// Find returns the scanner called name.
func (s *Set) Find(name string) (Scanner, bool) {
	for _, sc := range s.Scanners {
		if sc.Name == name {
			return sc, true
		}
	}
	return Scanner{}, false
}

// Names lists the scanners' names, in order.
func (s *Set) Names() []string {
	var out []string
	for _, sc := range s.Scanners {
		out = append(out, sc.Name)
	}
	return out
}

// validName is a scanner's name: the file name of its prompt, without .md.
var validName = lazy.Regexp(`^[a-z0-9][a-z0-9_-]{0,39}$`)

// Load reads the built-in scanners and the committed ones in top's Dir.
// A committed file that cannot be a scanner (a name that is not lower
// case letters, digits, - and _, an empty prompt) is an error naming it;
// other files in the folder (not .md) are ignored.
func Load(top string) (*Set, error) {
	byName := map[string]Scanner{}
	ents, err := fs.ReadDir(builtin, "builtin")
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		b, err := builtin.ReadFile(path.Join("builtin", e.Name()))
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(e.Name(), ".md")
		byName[name] = Scanner{Name: name, Prompt: string(b), From: "built in"}
	}
	set := &Set{}
	dir := filepath.Join(top, filepath.FromSlash(Dir))
	files, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("scanners: %w", err)
	}
	for _, f := range files {
		if f.IsDir() || !strings.HasSuffix(f.Name(), ".md") {
			continue
		}
		rel := Dir + "/" + f.Name()
		b, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		if f.Name() == ContextFile {
			set.Context = string(b)
			continue
		}
		name := strings.TrimSuffix(f.Name(), ".md")
		if !validName().MatchString(name) {
			return nil, fmt.Errorf("%s: a scanner's name is lower-case letters, digits, - and _ (at most 40), got %q", rel, name)
		}
		if strings.TrimSpace(string(b)) == "" {
			return nil, fmt.Errorf("%s: the scanner's prompt is empty", rel)
		}
		byName[name] = Scanner{Name: name, Prompt: string(b), From: rel}
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		set.Scanners = append(set.Scanners, byName[name])
	}
	return set, nil
}

// Protected declares the scanners' committed files for the landing's check
// (package protect): every file in Dir, so a branch cannot rewrite what
// the next refill asks for or files.
func Protected() []protect.Rule {
	return []protect.Rule{{Glob: Dir + "/**", Why: "a scanner prompt or its CONTEXT.md, read by the scanner loader"}}
}
