package funclen

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The module's other shape rules of issue 23, checked as cheaply as the
// function length: package main is a shell (§5), and each small rule has
// one home (§6). Each is a text search over the non-test Go files, so a
// second home fails here before a review finds it.

// TestMainIsAShell: package main imports only the command tree
// (internal/cli/root) and os, is under 300 lines (#23 §5; `go list -f
// '{{.Imports}}' .` shows the same), and declares nothing but
// func main() { os.Exit(root.Main()) }: the binary's exit code is
// root.Main's, which help_version (e2e/cli: version exits 0, an unknown
// command 64, through the same os.Exit(root.Main())) and
// internal/cli/root's TestMisuseExits64 prove. Read from the source, so
// package main needs no test binary of its own (#23: it linked all of
// claudopilot and k8s, ~3 s of CPU a suite, to start the binary twice).
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
	lines, mains := 0, 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name != "main" {
			continue
		}
		mains += mainDecls(t, fset, f)
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
	if mains != 1 {
		t.Errorf("package main declares func main %d times, want once: func main() { %s }", mains, mainBody)
	}
}

// mainBody is the whole of package main's main: the exit code is the
// command tree's.
const mainBody = "os.Exit(root.Main())"

// mainDecls checks that f declares nothing but imports and func main()
// { os.Exit(root.Main()) }, and returns how many such mains it holds.
func mainDecls(t *testing.T, fset *token.FileSet, f *ast.File) int {
	t.Helper()
	n := 0
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			if d.Tok != token.IMPORT {
				t.Errorf("%s: package main declares a %s: it holds only func main() { %s }", fset.Position(d.Pos()), d.Tok, mainBody)
			}
		case *ast.FuncDecl:
			var body bytes.Buffer
			if d.Body != nil && len(d.Body.List) == 1 {
				if err := printer.Fprint(&body, fset, d.Body.List[0]); err != nil {
					t.Fatal(err)
				}
			}
			if d.Name.Name != "main" || d.Recv != nil || body.String() != mainBody {
				t.Errorf("%s: func %s: package main holds only func main() { %s }", fset.Position(d.Pos()), d.Name.Name, mainBody)
				continue
			}
			n++
		}
	}
	return n
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

// TestNoShortHTTPTimeoutInTests: no test gives an HTTP client (an
// http.Client, issues' GitHubConfig) a request timeout under a minute (#23:
// 5 s failed at load 17-52, the fake running git inside an answer). A
// timeout is a bound against a hung fake, never a wait; a test of a hung
// answer cuts the connection (ghfake's Drop). The one exception times out
// on purpose against a server that never answers.
func TestNoShortHTTPTimeoutInTests(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// TestClientTimeoutIsTransient's 1 ms, against a server that never answers.
	onPurpose := map[string]time.Duration{"issues/unit_test.go": time.Millisecond}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok || !httpClientType(lit.Type) {
				return true
			}
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if k, _ := kv.Key.(*ast.Ident); ok && k != nil && k.Name == "Timeout" {
					if d, known := duration(kv.Value); known && d < time.Minute && d != onPurpose[filepath.ToSlash(rel)] {
						t.Errorf("%s: an HTTP client's Timeout of %s in a test: give it a bound a loaded machine never reaches (2 minutes, as issues' testTimeout)", fset.Position(kv.Pos()), d)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// httpClientType is true for http.Client and issues' GitHubConfig.
func httpClientType(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.SelectorExpr:
		return x.Sel.Name == "GitHubConfig" || x.Sel.Name == "Client" && fmt.Sprint(x.X) == "http"
	case *ast.Ident:
		return x.Name == "GitHubConfig"
	}
	return false
}

// duration evaluates time.Unit and N * time.Unit; known is false for
// anything else (a named constant, a variable).
func duration(e ast.Expr) (d time.Duration, known bool) {
	units := map[string]time.Duration{"Nanosecond": time.Nanosecond, "Microsecond": time.Microsecond, "Millisecond": time.Millisecond, "Second": time.Second, "Minute": time.Minute, "Hour": time.Hour}
	unit := func(e ast.Expr) (time.Duration, bool) {
		s, ok := e.(*ast.SelectorExpr)
		if !ok || fmt.Sprint(s.X) != "time" {
			return 0, false
		}
		u, ok := units[s.Sel.Name]
		return u, ok
	}
	if u, ok := unit(e); ok {
		return u, true
	}
	b, ok := e.(*ast.BinaryExpr)
	if !ok || b.Op != token.MUL {
		return 0, false
	}
	n, ok := b.X.(*ast.BasicLit)
	u, uok := unit(b.Y)
	if !ok || !uok || n.Kind != token.INT {
		return 0, false
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil {
		return 0, false
	}
	return time.Duration(v) * u, true
}
