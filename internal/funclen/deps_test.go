package funclen

import (
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/claudopilot/claudopilot"

// heavyDeps are dependencies that cost every test binary linking them
// seconds of CPU (issue 23: ~50 test binaries in the suite): each may be
// reached only from the packages listed, by their code or their tests
// (module-relative; "." is the module's root, the binary; internal/e2e
// and e2e/... are the end-to-end tests, which run the whole binary). A
// new importer fails here; take the dependency in through an interface
// the composition root fills instead (internal/cli/kubewire is the
// example), or list it with the reason.
var heavyDeps = []struct {
	prefix, why string
	allowed     []string
}{
	{"k8s.io/", "only the Kubernetes runner, its wiring and the root that injects it link k8s.io (wire.Cluster)",
		[]string{".", "kube", "internal/cli/kubewire", "internal/cli/root", "internal/e2e", "e2e/cli", "e2e/crash", "e2e/queue"}},
	{"k8s.io/client-go/testing", "the kube tests' fake API server keeps its own store: the object tracker took ~78 packages (protobuf, kube-openapi) into kube's test binary",
		nil},
	{"github.com/google/go-github/", "the GitHub client (27 MB of archive, the largest a link reads) is the queue's: package issues, the fake GitHub, and what runs the queue; a test needing a remote over HTTP uses internal/githttp, not the fake GitHub",
		[]string{".", "issues", "issues/ghfake", "engine", "promote", "internal/cli/answer", "internal/cli/clean", "internal/cli/demo", "internal/cli/doctor",
			"internal/cli/kubewire", "internal/cli/lanes", "internal/cli/pause", "internal/cli/promote", "internal/cli/queue",
			"internal/cli/retry", "internal/cli/root", "internal/cli/run", "internal/cli/scanners", "internal/cli/web", "internal/cli/wire",
			"internal/e2e", "e2e/cli", "e2e/crash", "e2e/queue"}},
	{"github.com/chromedp/", "the browser tests' driver (~60 packages): the page's own tests and e2e/queue's",
		[]string{"web", "e2e/queue"}},
}

// TestHeavyDepsOnlyWhereNeeded: no package's code or test binary reaches
// a heavy dependency (heavyDeps) unless it is allowed to. The import
// graph is read from the Go files' import lines (standard library only,
// no `go list`), over every build tag: a file that imports it under any
// tag counts.
func TestHeavyDepsOnlyWhereNeeded(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	code, tests := moduleImports(t, root)
	for _, h := range heavyDeps {
		reaches := reacher(code, h.prefix)
		all := maps.Clone(code)
		maps.Copy(all, tests)
		for _, p := range slices.Sorted(maps.Keys(all)) {
			rel := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
			if rel == "" {
				rel = "."
			}
			if slices.Contains(h.allowed, rel) {
				continue
			}
			if reaches(p) {
				t.Errorf("%s links %s: %s", rel, h.prefix, h.why)
			} else if i := slices.IndexFunc(tests[p], reaches); i >= 0 {
				t.Errorf("%s's tests link %s (through %s): %s", rel, h.prefix, tests[p][i], h.why)
			}
		}
	}
}

// reacher answers whether a package's code reaches an import path with
// prefix, directly or through other packages' code (memoised).
func reacher(code map[string][]string, prefix string) func(p string) bool {
	reach := map[string]bool{}
	var reaches func(p string, seen map[string]bool) bool
	reaches = func(p string, seen map[string]bool) bool {
		if strings.HasPrefix(p, prefix) {
			return true
		}
		if r, ok := reach[p]; ok {
			return r
		}
		if seen[p] {
			return false // an import cycle is go's to report
		}
		seen[p] = true
		r := slices.ContainsFunc(code[p], func(q string) bool { return reaches(q, seen) })
		reach[p] = r
		return r
	}
	return func(p string) bool { return reaches(p, map[string]bool{}) }
}

// lightPackages are packages that many test binaries link (cmdutil:
// every command's; status: the page's and every command showing a run),
// so what they reach is linked many times a suite (issue 23): they must
// not reach the engine or the queue (and through them go-github).
var lightPackages = []struct {
	pkg, why string
	not      []string
}{
	{"internal/cli/cmdutil", "every command imports cmdutil; the engine comes in through wire, internal/cli/snapshot or the command itself",
		[]string{module + "/engine", module + "/issues", module + "/internal/cli/wire", "github.com/google/go-github"}},
	{"status", "every command showing a run and the web page read the status snapshot; the promote ledger is promote/record's, not the promoter's",
		[]string{module + "/engine", module + "/issues", "github.com/google/go-github"}},
	{"promote/record", "status reads the promote ledger through it",
		[]string{module + "/issues", "github.com/google/go-github"}},
	{"internal/cli/snapshot", "status, explain, logs and report read a run's snapshot through it; the run's layout is state.MakeLayout's, not the engine's",
		[]string{module + "/engine", module + "/issues", "github.com/google/go-github"}},
	{"internal/cli/status", "status shows a run: the promote ledger through promote/record, the queue's summary lines are run's (internal/cli/run)",
		[]string{module + "/engine", module + "/issues", "github.com/google/go-github"}},
	{"internal/cli/explain", "explain reads a run's snapshot; retry's misuse is tested in internal/cli/root, which links every command anyway",
		[]string{module + "/engine", module + "/issues", "github.com/google/go-github"}},
	{"internal/cli/logs", "logs reads a phase's logs: its test binary needs neither the engine nor the queue",
		[]string{module + "/engine", module + "/issues", "github.com/google/go-github", "net/http"}},
}

// TestLightPackagesStayLight: a light package's code and tests reach none
// of its forbidden imports (lightPackages).
func TestLightPackagesStayLight(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	code, tests := moduleImports(t, root)
	for _, l := range lightPackages {
		p := module + "/" + l.pkg
		if _, ok := code[p]; !ok {
			t.Errorf("%s: no such package (lightPackages is stale)", l.pkg)
		}
		for _, not := range l.not {
			reaches := reacher(code, not)
			if reaches(p) || slices.ContainsFunc(tests[p], reaches) {
				t.Errorf("%s (or its tests) reaches %s: %s", l.pkg, not, l.why)
			}
		}
	}
}

// moduleImports reads the imports of the module's packages, by import
// path: of their non-test files (code), and of their _test.go files
// (tests: what the package's test binary adds).
func moduleImports(t *testing.T, root string) (code, tests map[string][]string) {
	t.Helper()
	code, tests = map[string][]string{}, map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		pkg := path.Join(module, filepath.ToSlash(rel))
		into := code
		if strings.HasSuffix(name, "_test.go") {
			into = tests
		}
		if _, ok := into[pkg]; !ok {
			into[pkg] = nil // the package exists even with no import
		}
		for _, imp := range f.Imports {
			q, _ := strconv.Unquote(imp.Path.Value)
			if !slices.Contains(into[pkg], q) {
				into[pkg] = append(into[pkg], q)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(code) == 0 {
		t.Fatalf("no Go files under %s", root)
	}
	return code, tests
}
