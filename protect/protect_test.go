package protect

import (
	"slices"
	"testing"
)

func TestMatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		glob, path string
		want       bool
	}{
		{"claudopilot.config", "claudopilot.config", true},
		{"claudopilot.config", "CLAUDOPILOT.CONFIG", true},
		{"claudopilot.config", "sub/claudopilot.config", false},
		{"claudopilot.config", "claudopilot.config.sh", false},
		{".claudopilot/**", ".claudopilot/config.json", true},
		{".claudopilot/**", ".claudopilot/prompts/worker.md", true},
		{".claudopilot/**", ".claudopilot", true}, // a file or symlink in the folder's place
		{".claudopilot/**", ".claudopilotx", false},
		{"roadmap/prompts/**", "roadmap/prompts/worker.md", true},
		{"roadmap/prompts/**", "roadmap/prompts", true},
		{"roadmap/prompts/**", "roadmap", true},
		{"roadmap/prompts/**", "roadmap/phase-01.md", false},
		{"roadmap/*.md", "roadmap/phase-01.md", true},
		{"roadmap/*.md", "roadmap/prompts/worker.md", false},
		{"roadmap/*.md", "roadmap", true},
		{"**/.gitattributes", ".gitattributes", true},
		{"**/.gitattributes", "src/deep/.gitattributes", true},
		{"**/.gitattributes", "src", false}, // no folder named literally
		{"**/.gitattributes", "src/x.gitattributes", false},
		{`a\*b/**`, "a*b/x", true},
		{`a\*b/**`, "a*b", true},
		{`a\*b/**`, "axb/x", false},
		{"scripts/{bootstrap,build}.sh", "scripts/build.sh", true},
		{"scripts/{bootstrap,build}.sh", "scripts", true},
		{"scripts/{bootstrap,build}.sh", "scripts/test.sh", false},
	} {
		if got := Match(tc.glob, tc.path); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.glob, tc.path, got, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	s := &Set{Rules: []Rule{
		{Glob: "claudopilot.config", Why: "a settings file"},
		{Glob: "roadmap/EXECUTION-MANIFEST.md", Why: "the manifest"},
		{Glob: "roadmap/*.md", Why: "a phase doc"},
	}}
	changed := []string{"src/a.go", "roadmap/EXECUTION-MANIFEST.md", "roadmap/p1.md", "roadmap/DONE_p1.md", "roadmap/p2.md", "claudopilot.config"}
	own := func(p string) bool { return p == "roadmap/p1.md" || p == "roadmap/DONE_p1.md" }
	got := s.Check(changed, own)
	want := []Hit{{"roadmap/EXECUTION-MANIFEST.md", "the manifest"}, {"roadmap/p2.md", "a phase doc"}, {"claudopilot.config", "a settings file"}}
	if !slices.Equal(got, want) {
		t.Errorf("Check = %v, want %v", got, want)
	}
	if d := Describe(got[2:]); d != "changes files that steer the next run: claudopilot.config (a settings file)" {
		t.Errorf("Describe = %q", d)
	}
	if got := (&Set{Off: true, Rules: s.Rules}).Check(changed, nil); got != nil {
		t.Errorf("an Off set found %v", got)
	}
}

func TestParseList(t *testing.T) {
	t.Parallel()
	rules, off, err := ParseList(" scripts/** , ./Makefile,/ci/*.yml")
	if err != nil || off {
		t.Fatalf("ParseList: %v %v", off, err)
	}
	var globs []string
	for _, r := range rules {
		globs = append(globs, r.Glob)
	}
	if !slices.Equal(globs, []string{"scripts/**", "Makefile", "ci/*.yml"}) {
		t.Errorf("globs = %q", globs)
	}
	if r, off, err := ParseList("None"); err != nil || !off || r != nil {
		t.Errorf("none: %v %v %v", r, off, err)
	}
	if r, off, err := ParseList(""); err != nil || off || r != nil {
		t.Errorf("empty: %v %v %v", r, off, err)
	}
	for _, bad := range []string{"none,Makefile", "../x", "a/[b", "."} {
		if _, _, err := ParseList(bad); err == nil {
			t.Errorf("ParseList(%q) took it", bad)
		}
	}
}

func TestUnder(t *testing.T) {
	t.Parallel()
	if r := Under("/repo", "/repo/roadmap/prompts", "p"); len(r) != 1 || r[0].Glob != "roadmap/prompts/**" {
		t.Errorf("Under = %v", r)
	}
	if r := Under("/repo", "/elsewhere/prompts", "p"); r != nil {
		t.Errorf("a folder outside the repository: %v", r)
	}
	if r := File("/repo", "/repo/ro*d/x.md", "p"); len(r) != 1 || !Match(r[0].Glob, "ro*d/x.md") || Match(r[0].Glob, "road/x.md") {
		t.Errorf("File = %v", r)
	}
}
