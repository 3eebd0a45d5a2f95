package manifest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

type wantPhase struct {
	id    string
	state State
	title string
	deps  []string
	owns  []string
	gate  string
	est   time.Duration
	line  int
}

type wantErr struct {
	line int
	msg  string // substring of the message
}

// checkPhases compares the parsed phases with want and checks that every
// StateSpan really covers the state word in the source.
func checkPhases(t *testing.T, m *Manifest, want []wantPhase) {
	t.Helper()
	if len(m.Phases) != len(want) {
		ids := make([]string, len(m.Phases))
		for i, p := range m.Phases {
			ids[i] = p.ID
		}
		t.Fatalf("got %d phases %q, want %d", len(m.Phases), ids, len(want))
	}
	for i, w := range want {
		p := m.Phases[i]
		if p.ID != w.id || p.State != w.state || p.Title != w.title || p.Gate != w.gate || p.Est != w.est {
			t.Errorf("phase %d = {id %q state %q title %q gate %q est %v}, want {%q %q %q %q %v}",
				i, p.ID, p.State, p.Title, p.Gate, p.Est, w.id, w.state, w.title, w.gate, w.est)
		}
		if !slices.Equal(p.Deps, w.deps) || !slices.Equal(p.Owns, w.owns) {
			t.Errorf("phase %q deps %q owns %q, want deps %q owns %q", p.ID, p.Deps, p.Owns, w.deps, w.owns)
		}
		if w.line != 0 && p.Line != w.line {
			t.Errorf("phase %q line %d, want %d", p.ID, p.Line, w.line)
		}
		if got := string(m.Src[p.StateSpan.Off : p.StateSpan.Off+p.StateSpan.Len]); got != string(p.State) {
			t.Errorf("phase %q StateSpan covers %q, want %q", p.ID, got, p.State)
		}
	}
}

func checkErrs(t *testing.T, err error, want []wantErr) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("unexpected error:\n%v", err)
		}
		return
	}
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error %v (%T), want ErrorList", err, err)
	}
	if len(list) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(list), len(want), err)
	}
	for i, w := range want {
		if list[i].Line != w.line || !strings.Contains(list[i].Msg, w.msg) {
			t.Errorf("error %d = %d: %s\nwant line %d containing %q", i, list[i].Line, list[i].Msg, w.line, w.msg)
		}
	}
}

func TestParseGrammar(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		src    string
		phases []wantPhase
		errs   []wantErr
	}{
		{
			name:   "ordered em dash",
			src:    "1. [pending] **phase-01** — contracts / shared types (deps: none)\n",
			phases: []wantPhase{{id: "phase-01", state: Pending, title: "contracts / shared types (deps: none)", line: 1}},
		},
		{
			name:   "bullet en dash",
			src:    "- [running] **p** – title\n",
			phases: []wantPhase{{id: "p", state: Running, title: "title"}},
		},
		{
			name:   "star bullet hyphen",
			src:    "* [merged] **p** - title - with - hyphens\n",
			phases: []wantPhase{{id: "p", state: Merged, title: "title - with - hyphens"}},
		},
		{
			name:   "plus bullet and paren ordered marker",
			src:    "+ [failed] **a** — x\n\n3) [blocked] **b** — y\n",
			phases: []wantPhase{{id: "a", state: Failed, title: "x"}, {id: "b", state: Blocked, title: "y", line: 3}},
		},
		{
			name:   "em dash without spaces",
			src:    "- [pending] **p**—tight\n",
			phases: []wantPhase{{id: "p", state: Pending, title: "tight"}},
		},
		{
			name: "missing dash or title is still a phase",
			src:  "- [pending] **a**\n- [pending] **b** —\n- [pending] **c** -\n- [pending] **d** no dash here\n",
			phases: []wantPhase{
				{id: "a", state: Pending}, {id: "b", state: Pending}, {id: "c", state: Pending},
				{id: "d", state: Pending, title: "no dash here"},
			},
		},
		{
			name:   "unicode title and ids",
			src:    "1. [pending] **phase-α** — Übersetzung 日本語 🚀 (deps: api.v2, #12)\n",
			phases: []wantPhase{{id: "phase-α", state: Pending, title: "Übersetzung 日本語 🚀 (deps: api.v2, #12)", deps: []string{"api.v2", "#12"}}},
		},
		{
			name: "parentheses, inline markdown and text after annotations",
			src:  "1. [pending] **p** — fix `parse()` for **bold** (see #3) (deps: a, b) then _more_ text (owns: api/, pkg/auth/token.go)\n",
			phases: []wantPhase{{
				id: "p", state: Pending,
				title: "fix `parse()` for **bold** (see #3) (deps: a, b) then _more_ text (owns: api/, pkg/auth/token.go)",
				deps:  []string{"a", "b"}, owns: []string{"api/", "pkg/auth/token.go"},
			}},
		},
		{
			name: "gate with balanced parentheses and backticks",
			src: "- [pending] **a** — x (gate: go test -run 'Test(A|B)' ./...) (est: 90m)\n" +
				"- [pending] **b** — y (gate: `make check`)\n" +
				"- [pending] **c** — z (gate: `echo \")\"`)\n",
			phases: []wantPhase{
				{id: "a", state: Pending, title: "x (gate: go test -run 'Test(A|B)' ./...) (est: 90m)", gate: "go test -run 'Test(A|B)' ./...", est: 90 * time.Minute},
				{id: "b", state: Pending, title: "y (gate: `make check`)", gate: "make check"},
				{id: "c", state: Pending, title: "z (gate: `echo \")\"`)", gate: `echo ")"`},
			},
		},
		{
			name: "est forms",
			src: "- [pending] **a** — (est: 2h)\n- [pending] **b** — (est: 1h30m)\n- [pending] **c** — (est: 45m)\n" +
				"- [pending] **d** — (est: 90)\n- [pending] **e** — (est: 1.5h)\n",
			phases: []wantPhase{
				{id: "a", state: Pending, title: "(est: 2h)", est: 2 * time.Hour},
				{id: "b", state: Pending, title: "(est: 1h30m)", est: 90 * time.Minute},
				{id: "c", state: Pending, title: "(est: 45m)", est: 45 * time.Minute},
				{id: "d", state: Pending, title: "(est: 90)", est: 90 * time.Minute},
				{id: "e", state: Pending, title: "(est: 1.5h)", est: 90 * time.Minute},
			},
		},
		{
			name: "deps lists are trimmed and empty entries dropped",
			src: "- [pending] **a** — (deps: none)\n- [pending] **b** — (deps: )\n- [pending] **c** — (deps:  x ,, `y`, )\n" +
				"- [pending] **d** — (Deps: x)\n",
			phases: []wantPhase{
				{id: "a", state: Pending, title: "(deps: none)"},
				{id: "b", state: Pending, title: "(deps: )"},
				{id: "c", state: Pending, title: "(deps:  x ,, `y`, )", deps: []string{"x", "y"}},
				{id: "d", state: Pending, title: "(Deps: x)", deps: []string{"x"}},
			},
		},
		{
			name:   "annotation inside a code span is prose",
			src:    "- [pending] **p** — document `(deps: x)` syntax (deps: y)\n",
			phases: []wantPhase{{id: "p", state: Pending, title: "document `(deps: x)` syntax (deps: y)", deps: []string{"y"}}},
		},
		{
			name:   "unknown annotation keys are prose",
			src:    "- [pending] **p** — (note: later) (dependencies: none) (estimate: 2h)\n",
			phases: []wantPhase{{id: "p", state: Pending, title: "(note: later) (dependencies: none) (estimate: 2h)"}},
		},
		{
			name: "nested lists at any depth",
			src: "- Wave 1\n  1. [merged] **a** — x\n     - [pending] **b** — y (deps: a)\n       * [pending] **c** — z (deps: b)\n" +
				"- [running] **d** — parent\n  - [pending] **e** — child\n",
			phases: []wantPhase{
				{id: "a", state: Merged, title: "x", line: 2},
				{id: "b", state: Pending, title: "y (deps: a)", deps: []string{"a"}, line: 3},
				{id: "c", state: Pending, title: "z (deps: b)", deps: []string{"b"}, line: 4},
				{id: "d", state: Running, title: "parent", line: 5},
				{id: "e", state: Pending, title: "child", line: 6},
			},
		},
		{
			name:   "tabs",
			src:    "1.\t[pending]\t**p**\t—\ttitle\t(deps:\ta,\tb)\t\n-\t[merged] **q** — t\n",
			phases: []wantPhase{{id: "p", state: Pending, title: "title\t(deps:\ta,\tb)", deps: []string{"a", "b"}}, {id: "q", state: Merged, title: "t"}},
		},
		{
			name: "CRLF",
			src:  "# T\r\n\r\n1. [pending] **p** — title (deps: none)\r\n2. [merged] **q** — t2 (deps: p)\r\n",
			phases: []wantPhase{
				{id: "p", state: Pending, title: "title (deps: none)", line: 3},
				{id: "q", state: Merged, title: "t2 (deps: p)", deps: []string{"p"}, line: 4},
			},
		},
		{
			name:   "file without trailing newline",
			src:    "- [pending] **p** — last",
			phases: []wantPhase{{id: "p", state: Pending, title: "last"}},
		},
		{
			name:   "byte order mark before the first item",
			src:    "\uFEFF- [pending] **a** — x\n",
			phases: []wantPhase{{id: "a", state: Pending, title: "x", line: 1}},
		},
		{
			name:   "content on the line after the marker",
			src:    "1.\n   [pending] **p** — late start\n",
			phases: []wantPhase{{id: "p", state: Pending, title: "late start", line: 2}},
		},
		{
			name:   "setext underline in an item keeps the phase",
			src:    "- [pending] **p** — heading-ish\n  ---\n",
			phases: []wantPhase{{id: "p", state: Pending, title: "heading-ish"}},
		},
		{
			name:   "annotations on a continuation line are not read",
			src:    "- [pending] **p** — long title\n  wrapped (deps: q)\n",
			phases: []wantPhase{{id: "p", state: Pending, title: "long title"}},
		},
		{
			name: "link reference definition named like a state",
			src:  "[pending]: http://x\n[merged]: <http://y> \"t\"\n\n- [pending] **p** — x\n- [merged] **q** — y\n",
			phases: []wantPhase{
				{id: "p", state: Pending, title: "x", line: 4},
				{id: "q", state: Merged, title: "y", line: 5},
			},
		},
		{
			name: "task lists and ordinary lists are not phases",
			src: "- [ ] todo\n- [x] done\n- [X] **bold** — task with bold\n- [link](http://x) text\n- [ref] plain text\n" +
				"- plain **bold** — text\n1. step one\n- `[pending] **p** — in code`\n- **p** — bold first\n- [see docs] **x**\n",
		},
		{
			name: "phase-like lines in code and HTML are ignored",
			src: "```\n- [pending] **a** — x\n- [pendng] **b** — x\n```\n\n~~~md\n1. [merged] **c** — x\n~~~\n\n" +
				"Para:\n\n    - [running] **d** — indented code\n\n<!--\n- [failed] **e** — comment\n[bad] **f** — x\n-->\n\n" +
				"<details>\n- [pending] **g** — html block\n</details>\n\n- [pending] **real** — x\n",
			phases: []wantPhase{{id: "real", state: Pending, title: "x", line: 23}},
		},
		{
			name:   "fence inside a list item",
			src:    "- [pending] **a** — x\n\n  ```\n  - [pending] **b** — not a phase\n  ```\n",
			phases: []wantPhase{{id: "a", state: Pending, title: "x"}},
		},
		{
			name:   "blockquote",
			src:    "> 1. [blocked] **q** — quoted (deps: a)\n",
			phases: []wantPhase{{id: "q", state: Blocked, title: "quoted (deps: a)", deps: []string{"a"}}},
		},

		// Errors: a phase-like item is never skipped silently.
		{
			name: "unknown state",
			src:  "# T\n\n1. [pendng] **p** — x\n",
			errs: []wantErr{{3, `unknown state "pendng" (want pending, running, merged, failed or blocked)`}},
		},
		{
			name: "state is case-sensitive",
			src:  "- [Pending] **p** — x\n",
			errs: []wantErr{{1, `unknown state "Pending"`}},
		},
		{
			name: "no bold id",
			src:  "- [pending] phase-01 — x\n- [merged]\n",
			errs: []wantErr{{1, "missing bold phase id"}, {2, "missing bold phase id"}},
		},
		{
			name: "unclosed bold id",
			src:  "- [pending] **p — x\n",
			errs: []wantErr{{1, "unclosed bold phase id"}},
		},
		{
			name: "bad ids",
			src:  "- [pending] **** — x\n- [pending] **a b** — x\n- [pending] **a,b** — x\n",
			errs: []wantErr{{1, "is empty"}, {2, "contains whitespace"}, {3, `contains ','`}},
		},
		{
			name: "unclosed annotation",
			src:  "\n- [pending] **p** — x (deps: a, b\n",
			errs: []wantErr{{2, `phase "p": unclosed (deps: annotation`}},
		},
		{
			name: "bad est",
			src:  "- [pending] **a** — (est: soon)\n- [pending] **b** — (est: -5m)\n- [pending] **c** — (est: 0)\n- [pending] **d** — (est: )\n",
			errs: []wantErr{{1, "bad (est: soon)"}, {2, "bad (est: -5m)"}, {3, "bad (est: 0)"}, {4, "bad (est: )"}},
		},
		{
			name: "duplicate annotation",
			src:  "- [pending] **p** — (deps: a) (gate: x) (DEPS: b)\n",
			errs: []wantErr{{1, "duplicate (deps: …) annotation"}},
		},
		{
			name: "bad dependency and empty gate",
			src:  "- [pending] **p** — (deps: a b) (gate: )\n",
			errs: []wantErr{{1, `dependency "a b" contains whitespace`}, {1, "empty (gate: ) annotation"}},
		},
		{
			name:   "duplicate id keeps the first",
			src:    "- [pending] **p** — one\n- [merged] **p** — two\n",
			phases: []wantPhase{{id: "p", state: Pending, title: "one"}},
			errs:   []wantErr{{2, `duplicate phase id "p" (first at line 1)`}},
		},
		{
			name:   "unclosed HTML comment",
			src:    "- [pending] **a** — x\n\n<!-- oops\n- [pending] **b** — swallowed\n",
			phases: []wantPhase{{id: "a", state: Pending, title: "x"}},
			errs:   []wantErr{{3, "unclosed HTML comment"}},
		},
		{
			name: "all errors in line order, valid phases kept",
			src: "**Status:** done\n\n1. [pending] **ok** — fine\n2. [pendng] **x** — y\n3. [merged] **ok2** — fine (deps: ok)\n" +
				"4. [pending] **z** — (est: soon) (deps: q\n",
			phases: []wantPhase{{id: "ok", state: Pending, title: "fine"}, {id: "ok2", state: Merged, title: "fine (deps: ok)", deps: []string{"ok"}}},
			errs: []wantErr{
				{1, `unknown **Status:** "done"`}, {4, "unknown state"}, {6, "bad (est: soon)"}, {6, "unclosed (deps:"},
			},
		},
		{
			name: "empty file",
			src:  "",
		},
		{
			name: "no phases",
			src:  "# Just prose\n\nNothing to run.\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Parse([]byte(tt.src))
			if m == nil {
				t.Fatal("Parse returned a nil Manifest")
			}
			checkErrs(t, err, tt.errs)
			checkPhases(t, m, tt.phases)
		})
	}
}

func TestParseSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                  string
		src                   string
		status, gate, prepare string
		statusLine            int
		errs                  []wantErr
	}{
		{
			name:   "plain",
			src:    "# M\n\n**Status:** in-progress\n**Gate:** go test ./...\n**Prepare:** make deps\n",
			status: "in-progress", gate: "go test ./...", prepare: "make deps", statusLine: 3,
		},
		{
			name:   "backticks stripped, colon outside bold, key case",
			src:    "**status**: `complete`\n\n**GATE:** `go vet ./... && go test ./...`  \n",
			status: "complete", gate: "go vet ./... && go test ./...", statusLine: 1,
		},
		{
			name:   "CRLF",
			src:    "**Status:** complete\r\n**Gate:** make\r\n",
			status: "complete", gate: "make", statusLine: 1,
		},
		{
			name: "not file level: list, quote, code, html",
			src:  "- **Status:** bogus\n\n> **Gate:** no\n\n```\n**Status:** bogus\n```\n\n<!--\n**Prepare:** no\n-->\n",
		},
		{
			name:   "unknown status value is an error but kept",
			src:    "**Status:** done\n",
			status: "done", statusLine: 1,
			errs: []wantErr{{1, `unknown **Status:** "done" (want in-progress or complete)`}},
		},
		{
			name:   "duplicates",
			src:    "**Status:** complete\n**Gate:** a\n\n**Status:** in-progress\n**Gate:** b\n**Prepare:** c\n**Prepare:** d\n",
			status: "complete", gate: "a", prepare: "c", statusLine: 1,
			errs: []wantErr{
				{4, "duplicate **Status:** line (first at line 1)"},
				{5, "duplicate **Gate:** line (first at line 2)"},
				{7, "duplicate **Prepare:** line (first at line 6)"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Parse([]byte(tt.src))
			checkErrs(t, err, tt.errs)
			if m.Status.Value != tt.status || m.Gate.Value != tt.gate || m.Prepare.Value != tt.prepare {
				t.Errorf("status %q gate %q prepare %q, want %q %q %q",
					m.Status.Value, m.Gate.Value, m.Prepare.Value, tt.status, tt.gate, tt.prepare)
			}
			if m.Status.Line != tt.statusLine {
				t.Errorf("status line %d, want %d", m.Status.Line, tt.statusLine)
			}
			for _, s := range []Setting{m.Status, m.Gate, m.Prepare} {
				if got := string(m.Src[s.Span.Off : s.Span.Off+s.Span.Len]); got != s.Value {
					t.Errorf("span covers %q, want %q", got, s.Value)
				}
			}
		})
	}
}

func TestParseCheckpoints(t *testing.T) {
	t.Parallel()
	src := "# M\n\n" +
		"<!-- LOOP-CHECKPOINT: review after wave 2 -->\n\n" + // 3
		"- [pending] **p** — x <!-- LOOP-CHECKPOINT: inline -->\n\n" + // 5
		"<!-- other comment --> <!--LOOP-CHECKPOINT:tight-->\n\n" + // 7
		"<!--\n  LOOP-CHECKPOINT: spans\n  two lines\n-->\n\n" + // 9
		"```\n<!-- LOOP-CHECKPOINT: in code -->\n```\n\n" +
		"Text `<!-- LOOP-CHECKPOINT: in span -->` <!-- LOOP-CHECKPOINT: after span -->\n\n" + // 18
		"> <!-- LOOP-CHECKPOINT: quoted -->\n" // 20
	m, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []Checkpoint{
		{3, "review after wave 2"}, {5, "inline"}, {7, "tight"}, {9, "spans\n  two lines"},
		{18, "after span"}, {20, "quoted"},
	}
	if !slices.Equal(m.Checkpoints, want) {
		t.Errorf("checkpoints\n got %+v\nwant %+v", m.Checkpoints, want)
	}
}

func TestParseDoesNotAliasInput(t *testing.T) {
	t.Parallel()
	src := []byte("- [pending] **p** — x\n")
	m, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	copy(src, "XXXXXXXXXXXXXXX")
	if _, err := m.SetState("p", Merged); err != nil {
		t.Fatalf("edit after caller reused its buffer: %v", err)
	}
}

func TestLaneAnnotation(t *testing.T) {
	m, err := Parse([]byte("- [pending] **a** — x (lane: codex) (deps: none)\n- [pending] **b** — y\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Phases[0].Lane != "codex" || m.Phases[1].Lane != "" {
		t.Fatalf("lanes %q %q", m.Phases[0].Lane, m.Phases[1].Lane)
	}
	for _, bad := range []string{"(lane: )", "(lane: a b)", "(lane: 9x)", "(lane: a) (lane: b)"} {
		_, err := Parse([]byte("- [pending] **a** — x " + bad + "\n"))
		if err == nil || !strings.Contains(err.Error(), "1:") {
			t.Errorf("%s: err %v, want one naming line 1", bad, err)
		}
	}
}
