package transcript

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the text sections of testdata/*.txtar")

// fixture is one testdata/*.txtar: its comment names its source, "log"
// is the agent's output, "text" the transcript WriteText makes of it.
type fixture struct {
	path    string
	ar      *txtar.Archive
	log     string
	entries []Entry
}

func readFixture(t *testing.T, name string) fixture {
	t.Helper()
	path := filepath.Join("testdata", name)
	ar, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ar.Comment), "Source") {
		t.Errorf("%s: its comment must name its source", path)
	}
	f := fixture{path: path, ar: ar}
	for _, file := range ar.Files {
		if file.Name == "log" {
			f.log = string(file.Data)
		}
	}
	f.entries, err = Read(strings.NewReader(f.log))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestGolden renders every fixture as text and compares it with its
// "text" section (go test -run TestGolden -update ./transcript rewrites
// them).
func TestGolden(t *testing.T) {
	names, _ := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if len(names) < 5 {
		t.Fatalf("fixtures: %v", names)
	}
	for _, path := range names {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f := readFixture(t, filepath.Base(path))
			var b strings.Builder
			if err := WriteText(&b, f.entries, DefaultFold); err != nil {
				t.Fatal(err)
			}
			got := b.String()
			for i := range f.ar.Files {
				if f.ar.Files[i].Name != "text" {
					continue
				}
				if *update {
					f.ar.Files[i].Data = []byte(got)
					if err := os.WriteFile(path, txtar.Format(f.ar), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				if want := string(f.ar.Files[i].Data); got != want {
					t.Errorf("text of %s:\n%s\nwant:\n%s", path, got, want)
				}
				return
			}
			t.Fatalf("%s has no text section", path)
		})
	}
}

// find is the first entry of kind k whose tool or text contains s.
func find(t *testing.T, es []Entry, k Kind, s string) Entry {
	t.Helper()
	for _, e := range es {
		if e.Kind == k && (strings.Contains(e.Tool, s) || strings.Contains(e.Text, s) || strings.Contains(e.Input, s)) {
			return e
		}
	}
	t.Fatalf("no %s entry with %q in %+v", k, s, es)
	return Entry{}
}

func count(es []Entry, k Kind) int {
	n := 0
	for _, e := range es {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// Claude's stream-json: each message one turn with its tokens (one
// message in two lines is one turn), each tool call paired with its
// result by id, a failed result marked, and the run's cost at the end.
func TestClaude(t *testing.T) {
	es := readFixture(t, "claude-tools.txtar").entries
	if n := count(es, Turn); n != 4 {
		t.Errorf("%d turns, want 4 (msg_01A streams in two lines)", n)
	}
	first := find(t, es, Turn, "")
	if f := first.Figures; f == nil || *f.InputTokens != 1200 || *f.OutputTokens != 85 || *f.CacheWrite != 3000 {
		t.Errorf("turn 1's figures: %+v (want the newest line's usage: 1200 in, 85 out)", first.Figures)
	}
	bash := find(t, es, Tool, "Bash")
	if bash.Input != "go test ./..." || !bash.Failed || bash.Pending || !strings.Contains(bash.Output, "got 2, want 3") {
		t.Errorf("Bash call: %+v", bash)
	}
	read := find(t, es, Tool, "Read")
	if read.Input != "/work/repo/parse.go" || read.Failed || !strings.Contains(read.Output, "func Parse") {
		t.Errorf("Read call (its result a list of text blocks): %+v", read)
	}
	res := find(t, es, Result, "Fixed")
	if res.Input != "success" || res.Figures == nil || *res.Figures.CostUSD != 0.0421 || *res.Figures.Turns != 4 {
		t.Errorf("result: %+v %+v", res, res.Figures)
	}
}

// Codex: an item started and completed is one entry (the newest state),
// a failed command is marked, each turn has its usage.
func TestCodex(t *testing.T) {
	es := readFixture(t, "codex-exec.txtar").entries
	if n := count(es, Tool); n != 3 {
		t.Errorf("%d tool entries, want 3 (two commands, one edit): %+v", n, es)
	}
	red := find(t, es, Tool, "shell")
	if !red.Failed || red.Pending || !strings.Contains(red.Output, "FAIL") {
		t.Errorf("the failing command: %+v", red)
	}
	turn := find(t, es, Turn, "")
	if f := turn.Figures; f == nil || *f.InputTokens != 24763 || *f.CacheRead != 24448 || *f.OutputTokens != 122 {
		t.Errorf("turn figures: %+v", turn.Figures)
	}
	find(t, es, Tool, "edit")
	find(t, es, Text, "Parse counted")
	find(t, es, Note, "[x] Fix Parse")

	old := readFixture(t, "codex-legacy-failed.txtar").entries
	find(t, old, Tool, "github.search_issues")
	find(t, old, Text, "Three issues")
	find(t, old, Error, "usage limit")
}

// opencode: steps are turns with their tokens and cost (reasoning counted
// as output), a tool's error is its output.
func TestOpencode(t *testing.T) {
	es := readFixture(t, "opencode-run.txtar").entries
	bash := find(t, es, Tool, "bash")
	if bash.Input != "make build" || bash.Failed || !strings.Contains(bash.Output, "unused variable") {
		t.Errorf("bash call: %+v", bash)
	}
	read := find(t, es, Tool, "read")
	if !read.Failed || !strings.Contains(read.Output, "File not found") {
		t.Errorf("failed read: %+v", read)
	}
	var turns []Entry
	for _, e := range es {
		if e.Kind == Turn {
			turns = append(turns, e)
		}
	}
	if len(turns) != 2 || turns[0].Figures == nil || *turns[0].Figures.CostUSD != 0.0070147 ||
		*turns[1].Figures.OutputTokens != 50 || *turns[1].Figures.CacheRead != 10900 {
		t.Fatalf("turns: %+v", turns)
	}
	find(t, es, Error, "Rate limit")
}

// Plain lines stay text, one block; escape sequences and control
// characters never reach the terminal or the page.
func TestPlainAndHostile(t *testing.T) {
	es := readFixture(t, "plain-hostile.txtar").entries
	if len(es) != 1 || es[0].Kind != Plain {
		t.Fatalf("want one plain block: %+v", es)
	}
	var b strings.Builder
	WriteText(&b, es, DefaultFold)
	out := b.String()
	if strings.ContainsAny(out, "\x1b\x07\r") {
		t.Errorf("text keeps control characters: %q", out)
	}
	if !strings.Contains(out, "red  back to    the startoverwritten") || !strings.Contains(out, `{"not":"an event"}`) {
		t.Errorf("text:\n%s", out)
	}
	h := string(HTML(es[0]))
	if strings.ContainsAny(h, "\x1b\x07\r") || !strings.Contains(h, `{&#34;not&#34;:&#34;an event&#34;}`) {
		t.Errorf("HTML: %q", h)
	}
}

// HTML escapes what the agent wrote, and folds a tool's output.
func TestHTML(t *testing.T) {
	e := Entry{Kind: Tool, Tool: "Bash<script>", Input: `echo "<img src=x onerror=alert(1)>"`, Output: "</pre><script>alert(1)</script>\nline 2", Failed: true}
	h := string(HTML(e))
	if strings.Contains(h, "<script>") || strings.Contains(h, "<img") || strings.Contains(h, "</pre><script") {
		t.Errorf("not escaped: %s", h)
	}
	for _, want := range []string{`<details class="tx tx-tool tx-failed">`, "<summary><b>Bash&lt;script&gt;</b>", "2 lines", "failed"} {
		if !strings.Contains(h, want) {
			t.Errorf("no %q in %s", want, h)
		}
	}
	if h := string(HTML(Entry{Kind: Tool, Tool: "Read", Input: "a.go", Pending: true})); !strings.Contains(h, "running") || strings.Contains(h, "<details") {
		t.Errorf("a pending call: %s", h)
	}
}

// The stream form prints each entry once, then what comes to it later.
func TestTextStream(t *testing.T) {
	f := readFixture(t, "codex-exec.txtar")
	var b strings.Builder
	s := NewTextStream(&b, DefaultFold)
	for _, l := range strings.Split(strings.TrimSpace(f.log), "\n") {
		if err := s.Line(l); err != nil {
			t.Fatal(err)
		}
	}
	out := b.String()
	for _, want := range []string{"── turn 1\n", "▸ shell: bash -lc 'go test ./calc' (running)", "  ⎿ ✗ shell: bash -lc 'go test ./calc'", "    │ --- FAIL: TestParse", "── turn 1 spent 24,763 in · 122 out · 24,448 cached"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Count(out, "Checking the failing test") != 1 {
		t.Errorf("an entry printed twice:\n%s", out)
	}
}

// A field past MaxField is cut, saying how much is left in the raw log.
func TestCapped(t *testing.T) {
	long := strings.Repeat("é", MaxField)
	got := capped(long)
	if len(got) > MaxField+64 || !strings.Contains(got, "more bytes in the raw log") || !strings.HasPrefix(got, "éé") {
		t.Errorf("capped: len %d, tail %q", len(got), got[len(got)-40:])
	}
}

// A line past MaxLine does not stop the reading: the lines after it are
// read.
func TestReadLongLine(t *testing.T) {
	log := `{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"before"}]}}` + "\n" +
		strings.Repeat("x", MaxLine+10) + "\n" +
		`{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"after"}]}}` + "\n"
	es, err := Read(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	find(t, es, Text, "before")
	find(t, es, Text, "after")
}

// Headline is an entry in one line for the live table, the newest
// readable thing an agent did.
func TestHeadline(t *testing.T) {
	for e, want := range map[*Entry]string{
		{Kind: Text, Text: "\n  Done: all pass.\nMore."}:       "Done: all pass.",
		{Kind: Tool, Tool: "Edit", Input: "a/b.go"}:            "Edit: a/b.go",
		{Kind: Tool, Output: "a result with no call"}:          "",
		{Kind: Thinking, Text: "**Planning**"}:                 "Planning",
		{Kind: Result, Input: "success", Text: "Renamed."}:     "result: Renamed.",
		{Kind: Plain, Text: "one\ntwo \x1b[31mred\x1b[0m\n\n"}: "two red",
		{Kind: Turn, Number: 3}:                                "",
	} {
		if got := Headline(*e); got != want {
			t.Errorf("Headline(%+v) = %q, want %q", *e, got, want)
		}
	}
}
