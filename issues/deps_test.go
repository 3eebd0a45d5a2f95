package issues

import (
	"reflect"
	"testing"
)

func TestParseDeps(t *testing.T) {
	known := func(id string) bool { return id == "api" || id == "phase-03" }
	for _, tc := range []struct {
		name   string
		body   string
		issues []int
		phases []string
	}{
		{"depends on", "Depends on #12", []int{12}, nil},
		{"blocked by list", "Some text.\nBlocked by #12, #14\nmore", []int{12, 14}, nil},
		{"colon and and", "depends on: #3 and #4.", []int{3, 4}, nil},
		{"phase", "Depends on phase-03", nil, []string{"phase-03"}},
		{"known phase without digit", "Depends on api", nil, []string{"api"}},
		{"unknown phase-like", "Depends on phase-9 and #2", []int{2}, []string{"phase-9"}},
		{"prose is not a dep", "This depends on the login work.\nDepends on the login work", nil, nil},
		{"stops at prose", "Depends on #12 (the login page) and #13", []int{12}, nil},
		{"task list under heading", "## Dependencies\n\n- [ ] #12\n- [x] #14 login page\n- some prose\n\n## Notes\n\n- [ ] #99\n", []int{12, 14}, nil},
		{"nested heading keeps section", "# Plan\n\n## Dependencies\n### Issues\n- #5\n### Phases\n- phase-03\n# Other\n- #6\n", []int{5}, []string{"phase-03"}},
		{"label paragraph", "**Dependencies:**\n\n- [ ] #7\n- [ ] #8\n\n* #9\n", []int{7, 8}, nil},
		{"code is not a dep", "```\nDepends on #1\n```\n\n    Depends on #2\n\n<div>\nDepends on #3\n</div>\n\n> Depends on #4\n", nil, nil},
		{"code span counts", "Depends on `#5`", []int{5}, nil},
		{"in a list item", "- Depends on #6\n- Blocked by #7", []int{6, 7}, nil},
		{"crlf", "Depends on #8\r\nBlocked by #9\r\n", []int{8, 9}, nil},
		{"repeats once", "Depends on #1\nDepends on #1, #2", []int{1, 2}, nil},
		{"not an issue ref", "Depends on #abc", nil, nil},
		{"heading text is not a line", "## Depends on #3", nil, nil},
		{"soft break", "We need this.\nDepends on #10\nThanks", []int{10}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := ParseDeps(tc.body, known)
			if !reflect.DeepEqual(d.Issues, tc.issues) || !reflect.DeepEqual(d.Phases, tc.phases) {
				t.Errorf("ParseDeps(%q) = %v %v, want %v %v", tc.body, d.Issues, d.Phases, tc.issues, tc.phases)
			}
		})
	}
}

func TestIssueIDs(t *testing.T) {
	for id, want := range map[string]int{"#1": 1, "#42": 42, "#0": 0, "#01": 0, "42": 0, "#": 0, "#-1": 0, "#1a": 0} {
		n, ok := ParseIssueID(id)
		if n != want || ok != (want > 0) {
			t.Errorf("ParseIssueID(%q) = %d %v", id, n, ok)
		}
	}
	if IssueID(7) != "#7" || Branch(7) != "claudopilot/issue-7" {
		t.Error("IssueID/Branch")
	}
	if got := (Deps{Issues: []int{3}, Phases: []string{"p1"}}).IDs(); !reflect.DeepEqual(got, []string{"#3", "p1"}) {
		t.Errorf("IDs = %v", got)
	}
}

func TestGraphProblems(t *testing.T) {
	nodes := []graphNode{
		{N: 1, Deps: Deps{Issues: []int{2}}},
		{N: 2, Deps: Deps{Issues: []int{3}}},
		{N: 3, Deps: Deps{Issues: []int{1}}},
		{N: 4, Deps: Deps{Issues: []int{4, 50, 60}}},
		{N: 5, Deps: Deps{Phases: []string{"phase-01", "phase-99"}}},
		{N: 6, Deps: Deps{Phases: []string{"phase-02"}}},
		{N: 7, Deps: Deps{Issues: []int{1}}}, // waits on a cycle, is not in one
	}
	phases := []Phase{{ID: "phase-01"}, {ID: "phase-02", Deps: []string{"#6"}}}
	got := graphProblems(nodes, phases, map[int]bool{50: true, 60: false})
	want := map[int][]string{
		1: {"dependency cycle: #1 -> #2 -> #3 -> #1"},
		2: {"dependency cycle: #1 -> #2 -> #3 -> #1"},
		3: {"dependency cycle: #1 -> #2 -> #3 -> #1"},
		4: {`issue #4 depends on itself`, `issue #4 depends on unknown issue "#60"`},
		5: {`issue #5 depends on unknown phase "phase-99"`},
		6: {"dependency cycle: #6 -> phase-02 -> #6"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("graphProblems =\n%v\nwant\n%v", got, want)
	}
	got = graphProblems([]graphNode{{N: 1, Deps: Deps{Phases: []string{"phase-1"}}}}, nil, nil)
	if want := `issue #1 depends on unknown phase "phase-1" (no roadmap is loaded)`; len(got[1]) != 1 || got[1][0] != want {
		t.Errorf("no roadmap: %v", got)
	}
}

func TestParseExternalDeps(t *testing.T) {
	for _, tc := range []struct {
		name     string
		body     string
		issues   []int
		external []string
	}{
		{"owner/repo#N", "Depends on acme/lib#5 and #2", []int{2}, []string{"acme/lib#5"}},
		{"issue URL", "Blocked by https://github.com/acme/lib/issues/6.", nil, []string{"acme/lib#6"}},
		{"pull URL with fragment", "Depends on https://ghe.example/acme/lib/pull/7#issuecomment-12", nil, []string{"acme/lib#7"}},
		{"autolink", "Depends on <https://github.com/acme/lib/issues/8>", nil, []string{"acme/lib#8"}},
		{"link names its target", "Depends on [#9](https://github.com/acme/lib/issues/9)", nil, []string{"acme/lib#9"}},
		{"list under heading", "## Dependencies\n\n- [ ] acme/lib#10\n- [ ] https://github.com/acme/lib/issues/11 the API\n", nil, []string{"acme/lib#10", "acme/lib#11"}},
		{"repeats once", "Depends on acme/lib#5, ACME/lib#5", nil, []string{"acme/lib#5"}},
		{"not a ref", "Depends on acme/lib#x and https://github.com/acme/lib/wiki/5", nil, nil},
		{"code is not a dep", "```\nDepends on acme/lib#5\n```\n", nil, nil},
		{"own repository is local", "Depends on acme/widgets#3 and https://github.com/Acme/Widgets/issues/4", []int{3, 4}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := ParseDeps(tc.body, nil).Local("acme", "widgets")
			var ext []string
			for _, r := range d.External {
				ext = append(ext, r.String())
			}
			if !reflect.DeepEqual(d.Issues, tc.issues) || !reflect.DeepEqual(ext, tc.external) {
				t.Errorf("ParseDeps(%q) = %v %v, want %v %v", tc.body, d.Issues, ext, tc.issues, tc.external)
			}
		})
	}
}
