package roadmap

import (
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/manifest"
)

func TestWithJoinsOutsideNodes(t *testing.T) {
	src := "# R\n\n## Phases\n\n1. [pending] **a** — A (deps: none)\n2. [pending] **b** — B (deps: a, #1, #7)\n"
	rm, err := Parse("/rm", []byte(src), nil, Options{External: IsIssueRef})
	if err != nil {
		t.Fatal(err)
	}
	c, err := rm.With([]manifest.Phase{{ID: "#1", Title: "one", Deps: []string{"a", "#2"}}, {ID: "#2", Title: "two", Deps: []string{"o/r#3"}}})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(ns []*Node) string {
		var out []string
		for _, n := range ns {
			out = append(out, n.ID)
		}
		return strings.Join(out, ",")
	}
	b, one, two := c.Node("b"), c.Node("#1"), c.Node("#2")
	if got := ids(c.Deps(b)); got != "a,#1" || strings.Join(b.External, ",") != "#7" {
		t.Errorf("b deps %s external %v: want a,#1 and #7 (not offered) outside", got, b.External)
	}
	if got := ids(c.Deps(one)); got != "a,#2" || !one.Outside || one.Line != 0 {
		t.Errorf("#1 deps %s outside %v line %d", got, one.Outside, one.Line)
	}
	if strings.Join(two.External, ",") != "o/r#3" {
		t.Errorf("#2 external %v", two.External)
	}
	if len(rm.Deps(rm.Node("b"))) != 1 || len(rm.Nodes) != 2 {
		t.Error("With changed the roadmap it was called on")
	}
	if _, err := rm.With([]manifest.Phase{{ID: "#1", Deps: []string{"b"}}}); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("b -> #1 -> b: err = %v, want a cycle", err)
	}
	if _, err := rm.With([]manifest.Phase{{ID: "a"}}); err == nil {
		t.Error("an outside node with a phase's id was taken")
	}
	if e, err := Empty("/x").With([]manifest.Phase{{ID: "#4"}}); err != nil || len(e.Nodes) != 1 {
		t.Errorf("Empty().With: %v", err)
	}
}
