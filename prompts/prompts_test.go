package prompts

import (
	"github.com/claudopilot/claudopilot/protect"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func data() Data {
	return Data{
		ID: "phase-02", Title: "feature A", Role: "worker", Attempt: 1, Doc: "roadmap/phase-02-a.md",
		DoneDoc: "roadmap/DONE_phase-02-a.md", Manifest: "roadmap/EXECUTION-MANIFEST.md", Worktree: "/r/.claudopilot/worktrees/phase-02",
		Branch: "auto/phase-02", Base: "main", Gate: "go test ./...", Owns: []string{"api/", "pkg/x.go"},
	}
}

// The built-in worker prompt states the whole contract.
func TestWorkerPromptStatesTheContract(t *testing.T) {
	t.Parallel()
	b, err := Set{}.Render("worker", data())
	if err != nil {
		t.Fatal(err)
	}
	p := string(b)
	for _, want := range []string{
		"phase-02", "roadmap/phase-02-a.md", "auto/phase-02", "`api/`, `pkg/x.go`",
		"go test ./...", "git mv roadmap/phase-02-a.md roadmap/DONE_phase-02-a.md",
		"Never merge", "never edit `roadmap/EXECUTION-MANIFEST.md`", "Commit your work",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("worker prompt lacks %q:\n%s", want, p)
		}
	}
}

// The supervisor prompt is a narrow mandate; best-effort widens the size
// but keeps the prohibitions; a conflict gets its own instructions.
func TestSupervisorPrompt(t *testing.T) {
	t.Parallel()
	d := data()
	d.Role, d.Mode, d.Failure, d.FailureLog, d.Detail = "supervisor", "standard", "conflict", "/r/f.log", "conflicts with main: a.go"
	b, err := Set{}.Render("supervisor", d)
	if err != nil {
		t.Fatal(err)
	}
	p := string(b)
	for _, want := range []string{"**conflict**", "/r/f.log", "smallest change", "Resolve every conflict marker", "Never delete or skip tests"} {
		if !strings.Contains(p, want) {
			t.Errorf("supervisor prompt lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "larger change") {
		t.Error("standard mode allows a larger change")
	}
	d.Mode = "best-effort"
	b, _ = Set{}.Render("supervisor", d)
	if !strings.Contains(string(b), "larger change") || !strings.Contains(string(b), "Never delete or skip tests") {
		t.Errorf("best-effort prompt:\n%s", b)
	}
}

// Files in the override folders replace the built-ins, first folder
// first; <role>.project.md is appended.
func TestOverridesAndProjectAppend(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(b, "worker.md"), []byte("custom for {{.ID}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a, "worker.project.md"), []byte("Use tabs.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Set{Dirs: []string{a, b}}.Render("worker", data())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "custom for phase-02\n\nUse tabs.\n" {
		t.Fatalf("got %q", got)
	}
	// A broken override is an error naming the template, not a silent
	// fallback.
	if err := os.WriteFile(filepath.Join(a, "supervisor.md"), []byte("{{.Nope}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (Set{Dirs: []string{a}}).Render("supervisor", data()); err == nil || !strings.Contains(err.Error(), "supervisor.md") {
		t.Fatalf("err = %v", err)
	}
}

// Claudopilot's prompts (v0.x's claudopilot/prompts/worker.md, or a file
// PROMPT_FILE names) are used as written, not as templates, with the
// phase and the contract appended as Claudopilot appended them; the
// folder's worker.project.md is appended too. An override folder's
// worker.md wins over v0.x's; a named file over every folder. The v0.x
// folder and the named files are protected.
func TestClaudopilotPrompts(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	v0 := filepath.Join(top, "claudopilot", "prompts")
	over := filepath.Join(top, ".claudopilot", "prompts")
	for p, body := range map[string]string{
		filepath.Join(v0, "worker.md"):         "You are the v0 worker. {{ not a template }}\n",
		filepath.Join(v0, "worker.project.md"): "Project rules: no emoji.\n",
		filepath.Join(top, "mine.md"):          "My own supervisor prompt.\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := Set{Dirs: []string{over}, V0: v0, Files: map[string]string{"supervisor": filepath.Join(top, "mine.md")}}
	b, err := s.Render("worker", data())
	if err != nil {
		t.Fatal(err)
	}
	p := string(b)
	for _, want := range []string{"You are the v0 worker. {{ not a template }}", "The phase to execute is: phase-02", "`roadmap/DONE_phase-02-a.md`", "Do NOT merge", "    go test ./...", "Project rules: no emoji."} {
		if !strings.Contains(p, want) {
			t.Errorf("worker prompt lacks %q:\n%s", want, p)
		}
	}
	d := data()
	d.Role, d.Mode, d.Failure = "supervisor", "standard", "gate"
	b, err = s.Render("supervisor", d)
	if err != nil || !strings.HasPrefix(string(b), "My own supervisor prompt.") || !strings.Contains(string(b), "What went wrong: gate") {
		t.Errorf("supervisor prompt (%v):\n%s", err, b)
	}
	if err := os.MkdirAll(over, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(over, "worker.md"), []byte("override {{.ID}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ = s.Render("worker", data()); !strings.HasPrefix(string(b), "override phase-02") || strings.Contains(string(b), "The phase to execute") {
		t.Errorf("an override folder's worker.md does not win over v0.x's:\n%s", b)
	}
	ps := protect.Set{Rules: s.Protected(top)}
	for _, f := range []string{"claudopilot/prompts/worker.md", "claudopilot/prompts/new.md", "mine.md"} {
		if len(ps.Check([]string{f}, nil)) != 1 {
			t.Errorf("%s is not protected", f)
		}
	}
}
