package funclen

import (
	"bytes"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The module's other shape rules of issue 23, checked as cheaply as the
// function length: package main is a shell (§5), and each small rule has
// one home (§6). Each is a text search over the non-test Go files, so a
// second home fails here before a review finds it.

// TestMainIsAShell: package main imports only the command tree
// (internal/cli/root) and os, and is under 300 lines (#23 §5; `go list -f
// '{{.Imports}}' .` shows the same).
func TestMainIsAShell(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	allowed := []string{"os", "github.com/claudopilot/claudopilot/internal/cli/root"}
	lines := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name != "main" {
			continue
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !slices.Contains(allowed, p) {
				t.Errorf("%s imports %s: package main imports only the command tree (%s)", filepath.Base(path), p, strings.Join(allowed, ", "))
			}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(b, []byte("\n"))
	}
	if lines >= 300 {
		t.Errorf("package main is %d lines, want under 300", lines)
	}
}

// homes are the rules with one home each (#23 §6): text that may appear in
// the non-test Go files only in the files named (none: nowhere).
var homes = []struct {
	text, why string
	in        []string
}{
	{`"claudopilot.lock"`, "the driver lock's path is state.LockPath's", []string{"state/lock.go"}},
	{"type Reason ", "state.Reason is the only reason type", []string{"state/vocab.go"}},
	{"*= 2", "proc.Doubling is the one backoff rule (proc.Backoff an agent's)", []string{"proc/classify.go"}},
	// A file is replaced by atomicfile.Write; the manifest swaps an
	// atomicfile.Temp in by exchange (rename where there is none); the
	// others move no file's bytes: a worktree folder set aside, git's own
	// index.lock committed.
	{"os.Rename(", "one atomic-write helper, atomicfile", []string{"atomicfile/atomicfile.go", "roadmap/file.go", "work/guard.go", "worktree/indexlock.go"}},
	{"scheduler.New(", "one composition root, engine.Open", []string{"engine/engine.go"}},
	{"proc.Slots", "the loop counts every slot (#23 §4)", nil},
	{"func RunQueue", "the queue goes through engine.Open (#23 §2)", nil},
	{"SchedulerConfig", "the queue goes through engine.Open (#23 §2)", nil},
}

// TestOneHomePerRule fails when a rule's text appears outside its home.
func TestOneHomePerRule(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		for _, h := range homes {
			if bytes.Contains(b, []byte(h.text)) && !slices.Contains(h.in, rel) {
				t.Errorf("%s has %q: %s", rel, h.text, h.why)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
