package roadmap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
)

func parse(t *testing.T, src string, files []string, opt Options) (*Roadmap, error) {
	t.Helper()
	return Parse("/rm", []byte(src), files, opt)
}

func problems(t *testing.T, err error) []string {
	t.Helper()
	var inv *InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("want *InvalidError, got %v", err)
	}
	return strings.Split(inv.Error(), "\n")
}

func TestValidRoadmap(t *testing.T) {
	t.Parallel()
	src := `# M

1. [pending] **phase-01** — contracts (deps: none)
2. [pending] **phase-02** — feature A (deps: phase-01)
3. [pending] **phase-03** — feature B (deps: phase-01)
4. [pending] **phase-04** — assembly (deps: phase-02, phase-03)
`
	r, err := parse(t, src, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	waves := r.Levels(FileState)
	got := fmt.Sprint(idsOf(waves[0]), idsOf(waves[1]), idsOf(waves[2]))
	if got != "[phase-01] [phase-02 phase-03] [phase-04]" || len(waves) != 3 {
		t.Fatalf("waves = %v", got)
	}
	path, total, weighted := r.CriticalPath(FileState)
	if weighted || total != 3 || fmt.Sprint(idsOf(path)) != "[phase-01 phase-02 phase-04]" {
		t.Fatalf("critical path = %v %v %v", idsOf(path), total, weighted)
	}
	if o, _ := r.Graph().Order(); o != 4 {
		t.Fatalf("graph order %d", o)
	}
	if s, _ := r.Graph().Size(); s != 4 {
		t.Fatalf("graph size %d", s)
	}
}

// The three lines: the merged phase's dep on a phase that is no
// longer listed is history, and the remaining work is two waves.
func TestThreeLinesTwoWaves(t *testing.T) {
	t.Parallel()
	src := "1. [pending] **phase-01** — contracts / shared types (deps: none)\n" +
		"2. [pending] **phase-02** — feature A (deps: phase-01)\n" +
		"4. [merged] **phase-04** — assembly (deps: phase-02, phase-03)\n"
	r, err := parse(t, src, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w := r.Levels(FileState); len(w) != 2 {
		t.Fatalf("want 2 waves, got %d", len(w))
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0].Msg, `"phase-03"`) {
		t.Fatalf("warnings = %v", r.Warnings)
	}
}

func TestEveryErrorAtOnce(t *testing.T) {
	t.Parallel()
	src := `1. [pending] **a** — x (deps: none)
2. [pending] **a** — dup
3. [pending] **b** — self (deps: b)
4. [pending] **c** — unknown (deps: nope)
5. [pending] **phase-02** — x (deps: phase-05)
6. [pending] **phase-05** — y (deps: phase-02)
7. [pendng] **d** — bad state
`
	_, err := parse(t, src, nil, Options{RequireDocs: true})
	got := strings.Join(problems(t, err), "\n")
	for _, want := range []string{
		`/rm/EXECUTION-MANIFEST.md:2: duplicate phase id "a"`,
		`/rm/EXECUTION-MANIFEST.md:3: phase b depends on itself`,
		`/rm/EXECUTION-MANIFEST.md:4: phase c depends on unknown phase "nope"`,
		`/rm/EXECUTION-MANIFEST.md:5: dependency cycle: phase-02 -> phase-05 -> phase-02`,
		`/rm/EXECUTION-MANIFEST.md:7: `,
		`/rm/EXECUTION-MANIFEST.md:1: phase a has no doc`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

func TestLongCycleIsPrintedWhole(t *testing.T) {
	t.Parallel()
	src := `- [pending] **p1** — (deps: p3)
- [pending] **p2** — (deps: p1)
- [pending] **p3** — (deps: p2)
- [pending] **p4** — (deps: p1)
`
	_, err := parse(t, src, nil, Options{})
	got := problems(t, err)
	if len(got) != 1 || !strings.HasSuffix(got[0], "dependency cycle: p1 -> p3 -> p2 -> p1") {
		t.Fatalf("got %q", got)
	}
}

// A cycle is a typed error: errors.As finds it, with its path, through
// the manifest's InvalidError, and Cycles checks any graph (the issue
// queue's issues and phases) with the same check and wording, so no
// caller parses the message.
func TestCycleIsTyped(t *testing.T) {
	t.Parallel()
	src := `- [pending] **p1** — (deps: p3)
- [pending] **p2** — (deps: p1)
- [pending] **p3** — (deps: p2)
- [pending] **p4** — (deps: p4x)
`
	_, err := parse(t, src, nil, Options{})
	var ce *CycleError
	if !errors.As(err, &ce) || strings.Join(ce.Path, " ") != "p1 p3 p2" {
		t.Fatalf("errors.As(%v) = %+v, want the cycle p1 p3 p2", err, ce)
	}
	deps := map[string][]string{"#1": {"#2", "gone"}, "#2": {"phase-02"}, "phase-02": {"#1"}, "#3": {"#3x"}}
	got := Cycles([]string{"#1", "#2", "#3", "phase-02"}, func(id string) []string { return deps[id] })
	if len(got) != 1 || got[0].Error() != "dependency cycle: #1 -> #2 -> phase-02 -> #1" {
		t.Fatalf("Cycles = %v", got)
	}
	if got := Cycles([]string{"a", "b"}, func(string) []string { return nil }); len(got) != 0 {
		t.Fatalf("Cycles without edges = %v", got)
	}
}

func TestNoPhases(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]string{
		"empty":     "",
		"prose":     "# Roadmap\n\nNothing here.\n",
		"otherlist": "# Roadmap\n\n- a note\n- [ ] a task\n",
	} {
		_, err := parse(t, src, nil, Options{})
		got := problems(t, err)
		if len(got) != 1 || !strings.Contains(got[0], ":1: no phases found") {
			t.Errorf("%s: got %q", name, got)
		}
	}
}

func TestMissingManifest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := Load(dir, Options{})
	got := problems(t, err)
	if len(got) != 1 || !strings.Contains(got[0], "EXECUTION-MANIFEST.md: manifest not found") {
		t.Fatalf("got %q", got)
	}
}

// phase-1 must never take phase-10's doc: Claudopilot matched by prefix
// and merged an unfinished phase that way.
func TestDocsMatchExactly(t *testing.T) {
	t.Parallel()
	src := `1. [pending] **phase-1** — one
2. [pending] **phase-10** — ten
3. [merged] **phase-2** — two
4. [pending] **phase-3** — three
`
	files := []string{"EXECUTION-MANIFEST.md", "phase-10-api.md", "DONE_phase-2-x.md", "phase-3.md", "notes.md"}
	r, err := parse(t, src, files, Options{RequireDocs: true})
	got := problems(t, err)
	if len(got) != 1 || !strings.Contains(got[0], ":1: phase phase-1 has no doc") {
		t.Fatalf("got %q", got)
	}
	if d := r.Node("phase-10").Doc; d != "phase-10-api.md" {
		t.Errorf("phase-10 doc = %q", d)
	}
	if n := r.Node("phase-2"); n.Doc != "phase-2-x.md" || !n.Done || n.DocPath() != "DONE_phase-2-x.md" {
		t.Errorf("phase-2 doc = %q done=%v", n.Doc, n.Done)
	}
	if d := r.Node("phase-3").Doc; d != "phase-3.md" {
		t.Errorf("phase-3 doc = %q", d)
	}
}

func TestTwoDocsIsAnError(t *testing.T) {
	t.Parallel()
	_, err := parse(t, "1. [pending] **p** — x\n", []string{"p-a.md", "p-b.md"}, Options{})
	got := problems(t, err)
	if len(got) != 1 || !strings.Contains(got[0], "more than one doc: p-a.md, p-b.md") {
		t.Fatalf("got %q", got)
	}
}

// X and DONE_X together is what the folder holds while the driver lands
// the phase: an error for run and plan, a done phase for the views
// (MidRename); two different docs stay an error either way.
func TestMidRename(t *testing.T) {
	t.Parallel()
	files := []string{"DONE_p-a.md", "p-a.md"}
	if _, err := parse(t, "1. [pending] **p** — x\n", files, Options{}); !strings.Contains(strings.Join(problems(t, err), "\n"), "more than one doc: DONE_p-a.md, p-a.md") {
		t.Fatalf("without MidRename: %v", err)
	}
	r, err := parse(t, "1. [pending] **p** — x\n", files, Options{MidRename: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Node("p"); !n.Done || n.Doc != "p-a.md" {
		t.Errorf("p: doc %q done %v", n.Doc, n.Done)
	}
	_, err = parse(t, "1. [pending] **p** — x\n", []string{"DONE_p-a.md", "p-b.md"}, Options{MidRename: true})
	if got := problems(t, err); len(got) != 1 || !strings.Contains(got[0], "more than one doc") {
		t.Fatalf("two docs with MidRename: %q", got)
	}
}

func TestWeightedCriticalPathAndRemaining(t *testing.T) {
	t.Parallel()
	src := `1. [pending] **a** — (est: 10m)
2. [pending] **b** — (deps: a) (est: 90m)
3. [pending] **c** — (deps: a) (est: 20m)
4. [pending] **d** — (deps: c) (est: 20m)
5. [pending] **e** — (deps: d)
`
	r, err := parse(t, src, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	path, total, weighted := r.CriticalPath(FileState)
	if !weighted || total != 100*time.Minute || fmt.Sprint(idsOf(path)) != "[a b]" {
		t.Fatalf("path %v total %v", idsOf(path), total)
	}
	// e has no estimate: it weighs the average of the others (35m).
	rem := r.Remaining(FileState)
	if rem[r.Node("c").Index] != 20*time.Minute+20*time.Minute+35*time.Minute {
		t.Fatalf("remaining(c) = %v", rem[r.Node("c").Index])
	}
	merged := func(n *Node) manifest.State {
		if n.ID == "d" {
			return manifest.Merged
		}
		return n.State
	}
	if got := r.Remaining(merged)[r.Node("c").Index]; got != 55*time.Minute {
		t.Fatalf("remaining(c) with d merged = %v", got)
	}
}

func TestFileSetStateKeepsHumanEdit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, ManifestName)
	src := "1. [pending] **a** — x\n2. [pending] **b** — y\n"
	if err := os.WriteFile(path, []byte(src), 0o640); err != nil {
		t.Fatal(err)
	}
	f := NewFile(path)
	// A human edit made before the driver's write is kept.
	if err := os.WriteFile(path, []byte(src+"\nA note.\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := f.SetState("b", manifest.Running); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "1. [pending] **a** — x\n2. [running] **b** — y\n\nA note.\n"
	if string(got) != want {
		t.Fatalf("got %q", got)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o640 {
		t.Fatalf("mode changed to %v", st.Mode())
	}
	if err := f.SetStatus("complete"); err != nil {
		t.Fatal(err)
	}
	m, err := f.Read()
	if err != nil || m.Status.Value != "complete" {
		t.Fatalf("status %q %v", m.Status.Value, err)
	}
	if err := f.SetState("zzz", manifest.Running); err == nil || !errors.Is(err, manifest.ErrUnknownPhase) {
		t.Fatalf("unknown phase: %v", err)
	}
}

func TestLargeRoadmapIsLinear(t *testing.T) {
	t.Parallel()
	src := manifest.Generate(10000, 3, 1)
	r, err := Parse("/rm", src, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Nodes) != 10000 {
		t.Fatalf("%d nodes", len(r.Nodes))
	}
	n := 0
	for _, w := range r.Levels(FileState) {
		n += len(w)
	}
	if n != 10000-r.Counts()[manifest.Merged] {
		t.Fatalf("waves hold %d phases", n)
	}
}

// A 10k-long chain must not blow the stack in the cycle search.
func TestDeepChain(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 0; i < 10000; i++ {
		dep := "none"
		if i > 0 {
			dep = fmt.Sprintf("p%d", i-1)
		}
		fmt.Fprintf(&b, "- [pending] **p%d** — (deps: %s)\n", i, dep)
	}
	fmt.Fprintf(&b, "- [pending] **q** — (deps: p9999)\n")
	src := strings.Replace(b.String(), "**p0** — (deps: none)", "**p0** — (deps: q)", 1)
	_, err := Parse("/rm", []byte(src), nil, Options{})
	got := problems(t, err)
	if len(got) != 1 || !strings.Contains(got[0], "dependency cycle: p0 -> q -> p9999") {
		t.Fatalf("got %.200q", got)
	}
}

func idsOf(ns []*Node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.ID
	}
	return out
}

// The conditional replace never overwrites bytes other than those the new
// content was computed from.
func TestWriteAtomicOnlyOverWhatWasRead(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "m.md")
	if err := os.WriteFile(path, []byte("human's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := NewFile(path).replace([]byte("driver's\n"), []byte("what the driver read\n")); !errors.Is(err, errChanged) {
		t.Fatalf("err = %v, want errChanged", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "human's\n" {
		t.Fatalf("file = %q", b)
	}
	if err := NewFile(path).replace([]byte("driver's\n"), []byte("human's\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "driver's\n" {
		t.Fatalf("file = %q", b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v", st.Mode())
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*")); len(m) != 0 {
		t.Errorf("temp files left: %v", m)
	}
}
