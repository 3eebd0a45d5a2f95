package prompts

import (
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
