// Package funclen holds the module's shape tests: no core (non-test)
// function is over 80 lines (issue 23 §7), except the ones listed in
// over80.txt, which may only shrink; package main is a shell and each
// small rule has one home (shape_test.go, §5-6).
package funclen

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Max is the longest a function may be, in lines from its func keyword to
// its closing brace.
const Max = 80

// TestNoFunctionOver80Lines lists every function over Max lines in the
// module's non-test Go files and compares the list with over80.txt: a new
// long function fails, and so does a listed one that got short or went
// (remove its line), so the list stays the truth. go test -run
// TestNoFunctionOver80Lines -v ./internal/funclen prints the list.
func TestNoFunctionOver80Lines(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	long, err := Long(root, Max)
	if err != nil {
		t.Fatal(err)
	}
	allowed := readList(t, "over80.txt")
	var found []string
	for _, f := range long {
		t.Logf("%s (%d lines)", f.Name, f.Lines)
		found = append(found, f.Name)
		if !allowed[f.Name] {
			t.Errorf("%s is %d lines, over %d: split it (or, for now, list it in over80.txt)", f.Name, f.Lines, Max)
		}
	}
	for name := range allowed {
		if !slices.Contains(found, name) {
			t.Errorf("%s is listed in over80.txt but is no longer over %d lines (or is gone): remove its line", name, Max)
		}
	}
}

// Func is one function over the limit: "path/file.go: Recv.Name".
type Func struct {
	Name  string
	Lines int
}

// Long returns the functions over max lines in the non-test Go files under
// root (testdata, hidden folders and vendor skipped).
func Long(root string, max int) ([]Func, error) {
	var out []Func
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
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
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n > max {
				out = append(out, Func{Name: filepath.ToSlash(rel) + ": " + funcName(fn), Lines: n})
			}
		}
		return nil
	})
	return out, err
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.Ident:
		return x.Name + "." + fn.Name.Name
	case *ast.IndexExpr:
		return fmt.Sprint(x.X) + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// readList reads the allowed names, one a line; # starts a comment.
func readList(t *testing.T, name string) map[string]bool {
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "#") {
			m[line] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}
