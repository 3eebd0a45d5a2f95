package manifest

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func mustParse(t testing.TB, src []byte) *Manifest {
	t.Helper()
	m, err := Parse(src)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return m
}

func TestSetState(t *testing.T) {
	t.Parallel()
	src := "# M\r\n\r\n1. [pending] **a** — x (deps: none)\r\n2. [merged] **b** — [pending] in title (deps: a)\r\n"
	tests := []struct {
		id   string
		to   State
		want string
	}{
		{"a", Running, strings.Replace(src, "[pending] **a**", "[running] **a**", 1)},
		{"a", Pending, src},
		{"b", Failed, strings.Replace(src, "[merged] **b**", "[failed] **b**", 1)},
		{"b", Blocked, strings.Replace(src, "[merged] **b**", "[blocked] **b**", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.id+"="+string(tt.to), func(t *testing.T) {
			t.Parallel()
			m := mustParse(t, []byte(src))
			before := m.Phase(tt.id).State
			got, err := m.SetState(tt.id, tt.to)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
			if string(m.Src) != src || m.Phase(tt.id).State != before {
				t.Error("SetState modified the receiver")
			}
		})
	}
}

func TestSetStateErrors(t *testing.T) {
	t.Parallel()
	m := mustParse(t, []byte("- [pending] **a** — x\n"))
	if _, err := m.SetState("nope", Merged); !errors.Is(err, ErrUnknownPhase) {
		t.Errorf("unknown id: err = %v, want ErrUnknownPhase", err)
	}
	if _, err := m.SetState("a", State("done")); err == nil {
		t.Error("invalid state accepted")
	}
	// A manifest whose source was changed behind its back must not be
	// written through stale spans.
	m.Src = []byte("- [merged]  **a** — x\n")
	if _, err := m.SetState("a", Failed); err == nil {
		t.Error("stale span accepted")
	}
}

func TestApply(t *testing.T) {
	t.Parallel()
	src := []byte("- [pending] **a** — x\n- [pending] **b** — y (deps: a)\n")
	got, err := Apply(src, "b", Merged)
	if err != nil {
		t.Fatal(err)
	}
	if want := "- [pending] **a** — x\n- [merged] **b** — y (deps: a)\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := Apply(src, "c", Merged); !errors.Is(err, ErrUnknownPhase) {
		t.Errorf("unknown id: err = %v", err)
	}
	var list ErrorList
	if _, err := Apply([]byte("- [pendng] **a** — x\n"), "a", Merged); !errors.As(err, &list) || list[0].Line != 1 {
		t.Errorf("parse error not passed through: %v", err)
	}
}

func TestSetStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, to, want string
	}{
		{
			name: "replace",
			src:  "# M\n\n**Status:** in-progress\n**Gate:** x\n",
			to:   "complete",
			want: "# M\n\n**Status:** complete\n**Gate:** x\n",
		},
		{
			name: "replace keeps backticks and CRLF",
			src:  "**Status**: `complete`\r\n",
			to:   "in-progress",
			want: "**Status**: `in-progress`\r\n",
		},
		{
			name: "insert after first ATX heading",
			src:  "Intro\n===\n\n# Execution Manifest\n\n## Phases\n\n- [pending] **a** — x\n",
			to:   "in-progress",
			want: "Intro\n===\n\n# Execution Manifest\n\n**Status:** in-progress\n\n## Phases\n\n- [pending] **a** — x\n",
		},
		{
			name: "insert keeps CRLF and separates a following paragraph",
			src:  "# M\r\ntext right under\r\n",
			to:   "complete",
			want: "# M\r\n\r\n**Status:** complete\r\n\r\ntext right under\r\n",
		},
		{
			name: "insert after heading on last line without newline",
			src:  "# M",
			to:   "complete",
			want: "# M\n\n**Status:** complete\n",
		},
		{
			name: "headings in containers do not count",
			src:  "> # Quoted\n\n- # In a list\n\n# Top\n",
			to:   "complete",
			want: "> # Quoted\n\n- # In a list\n\n# Top\n\n**Status:** complete\n",
		},
		{
			name: "insert after byte order mark",
			src:  "\uFEFFtext\n",
			to:   "complete",
			want: "\uFEFF**Status:** complete\n\ntext\n",
		},
		{
			name: "insert after heading behind a byte order mark",
			src:  "\uFEFF# M\n- [pending] **a** — x\n",
			to:   "complete",
			want: "\uFEFF# M\n\n**Status:** complete\n\n- [pending] **a** — x\n",
		},
		{
			name: "insert at top without heading",
			src:  "- [pending] **a** — x\n",
			to:   "in-progress",
			want: "**Status:** in-progress\n\n- [pending] **a** — x\n",
		},
		{
			name: "insert into empty file",
			src:  "",
			to:   "complete",
			want: "**Status:** complete\n",
		},
		{
			name: "fill an empty value",
			src:  "**Status:**\n",
			to:   "complete",
			want: "**Status:** complete\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, _ := Parse([]byte(tt.src))
			got, err := m.SetStatus(tt.to)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("got\n%q\nwant\n%q", got, tt.want)
			}
			if string(m.Src) != tt.src {
				t.Error("SetStatus modified the receiver")
			}
			m2 := mustParse(t, got)
			if m2.Status.Value != tt.to {
				t.Errorf("reparsed status %q, want %q", m2.Status.Value, tt.to)
			}
			if len(m2.Phases) != len(m.Phases) {
				t.Errorf("phases %d -> %d", len(m.Phases), len(m2.Phases))
			}
		})
	}
	m := mustParse(t, []byte("**Status:** complete\n"))
	if _, err := m.SetStatus("done"); err == nil {
		t.Error("invalid status accepted")
	}
}

// TestSetStateCopiesOnce guards the O(file size) single-copy promise.
func TestSetStateCopiesOnce(t *testing.T) {
	src := Generate(2000, 3, 7)
	m := mustParse(t, src)
	id := m.Phases[len(m.Phases)/2].ID
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := m.SetState(id, Failed); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Errorf("SetState made %v allocations, want 1", allocs)
	}
	out, _ := m.SetState(id, Failed)
	if cap(out) != len(out) || !bytes.Contains(out, []byte("[failed] **"+id+"**")) {
		t.Errorf("unexpected output shape: len %d cap %d", len(out), cap(out))
	}
}
