package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMigrate: Claudopilot's and issue-pilot's files become one
// claudopilot.config that reads back as the same settings; renamed and
// dropped settings are reported. The files are written for this test in
// the forms of jopnick/claudopilot v0.4.0's templates/claudopilot.config.sh
// and kasbly/issue-pilot's issue-pilot.conf.example.
func TestMigrate(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(top, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("claudopilot.config.sh", `#!/usr/bin/env bash
export GATE_CMD="go vet ./... && go test ./..."
export MAX_PARALLEL=4
export RETRY_TRANSIENT_API=1
export WORKTREE_PREPARE_CMD='"quoted"'
`)
	write("issue-pilot.conf", `READY_LABEL="status/approved"
POLL_SECS=90
LANES="claude"
LANE_claude_CONCURRENCY=2
MAX_PARALLEL=9
GATE_CMD="$(make gate)"
`)
	write("claudopilot/prompts/worker.md", "work\n")
	m, err := Migrate(top, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.Read, ",") != "claudopilot.config.sh,issue-pilot.conf" {
		t.Errorf("read %v", m.Read)
	}
	for _, want := range []string{"\nGATE_CMD=go vet ./... && go test ./...\n", "\nMAX_PARALLEL=4\n", "\nREADY_LABEL=status/approved\n",
		"\n# from issue-pilot.conf:2 (POLL_SECS)\nPOLL_SECONDS=90\n", "\nLANE_claude_CONCURRENCY=2\n", "\nWORKTREE_PREPARE_CMD='\"quoted\"'\n",
		"pushed the base after every merge (git pull --ff-only before, git push origin <base> after)\nPUSH_BASE=1\n"} {
		if !strings.Contains(m.Config, want) {
			t.Errorf("config lacks %q:\n%s", want, m.Config)
		}
	}
	report := strings.Join(append(append(m.Took, m.Renamed...), m.Dropped...), "\n")
	for _, want := range []string{"POLL_SECS is written as POLL_SECONDS=90", "RETRY_TRANSIENT_API is Claudopilot's and has no effect here",
		"issue-pilot.conf:6", "claudopilot/prompts/", "PUSH_BASE=1: Claudopilot (claudopilot.config.sh) pushed the base"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	// Written out, the new file alone reads as the same settings.
	again := t.TempDir()
	if err := os.WriteFile(filepath.Join(again, ConfigFile), []byte(m.Config), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _, probs, _ := readFiles(again, map[string]string{})
	if len(probs) != 0 {
		t.Fatalf("the migrated file has problems: %v", probs)
	}
	for k, want := range map[string]string{"GATE_CMD": "go vet ./... && go test ./...", "MAX_PARALLEL": "4", "POLL_SECONDS": "90", "WORKTREE_PREPARE_CMD": `"quoted"`, "LANES": "claude", "PUSH_BASE": "1"} {
		if got[k].v != want {
			t.Errorf("%s reads back as %q, want %q", k, got[k].v, want)
		}
	}
	if ClaudopilotFile(again, map[string]string{}) != "" {
		t.Error("claudopilot.config alone is taken for a Claudopilot layout")
	}
	write(ConfigFile, "MAX_PARALLEL=2\n")
	if _, err := Migrate(top, map[string]string{}); err == nil {
		t.Error("migrate overwrote an existing claudopilot.config")
	}
	if _, err := Migrate(t.TempDir(), map[string]string{}); err != ErrNothingToMigrate {
		t.Errorf("no files: %v", err)
	}
}

// TestPushBaseNote: in a Claudopilot layout without PUSH_BASE the run and
// doctor say the base is no longer pushed; with it set, nothing is said.
func TestPushBaseNote(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	if err := os.MkdirAll(filepath.Join(top, ".claudopilot"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(top, ".claudopilot", "config.json"), []byte(`{"gateCmd": "make test"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// A Claudopilot layout without PUSH_BASE: the run and doctor say
	// the base is no longer pushed; set, nothing is said.
	for _, c := range []struct {
		env  map[string]string
		note bool
	}{{map[string]string{}, true}, {map[string]string{"PUSH_BASE": "0"}, false}} {
		s, err := Resolve(Input{Top: top, Env: c.env})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(strings.Join(s.DefaultNotes(), "\n"), PushBaseNote(".claudopilot/config.json")); got != c.note {
			t.Errorf("env %v: PUSH_BASE's note shown %v, want %v: %q", c.env, got, c.note, s.DefaultNotes())
		}
	}
}

// Under the claude preset a worker resumes its session by default (as
// Claudopilot's claude driver did), announced as a changed default; a
// command given in full, another driver, LANES or AGENT_RESUME_CMD set
// (even empty) turn the preset off.
func TestClaudePresetResumes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"default", nil, DefaultAgent + " --resume {session}"},
		{"driver claude with a model", map[string]string{"AGENT_DRIVER": "claude", "AGENT_MODEL": "opus"}, DefaultAgent + " --model opus --resume {session}"},
		{"codex", map[string]string{"AGENT_DRIVER": "codex"}, ""},
		{"own command", map[string]string{"AGENT_CMD": "my-agent"}, ""},
		{"set empty", map[string]string{"AGENT_RESUME_CMD": ""}, ""},
		{"set", map[string]string{"AGENT_RESUME_CMD": "x {session}"}, "x {session}"},
		{"lanes", map[string]string{"LANES": "a", "LANE_a_CMD": "claude -p"}, ""},
	} {
		s, err := Resolve(Input{Scope: Run, Env: c.env, Top: t.TempDir()})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if s.ResumeCmd != c.want || s.ResumePreset != (c.name == "default" || c.name == "driver claude with a model") {
			t.Errorf("%s: AGENT_RESUME_CMD %q (preset %v), want %q", c.name, s.ResumeCmd, s.ResumePreset, c.want)
		}
	}
}

// TestForeignClaimDefaults: by default the queue leaves alone the issues
// issue-pilot (in-pilot) and issue-orchestrator (io:claimed, its advisory
// claim label) hold, and agent-running, the name issue 26 gives the latter.
func TestForeignClaimDefaults(t *testing.T) {
	t.Parallel()
	s, err := Resolve(Input{Scope: Queue, Top: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.ForeignClaims, ","); got != "in-pilot,agent-running,io:claimed" {
		t.Errorf("FOREIGN_CLAIM_LABELS default %q", got)
	}
}

// TestOrchestratorConfigNoted: a repository set up for issue-orchestrator
// (.issue-orchestrator/config/*.yaml) is told, at start and in doctor (the
// settings' notes) and by migrate, that those settings are not read.
func TestOrchestratorConfigNoted(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	dir := filepath.Join(top, ".issue-orchestrator", "config", "modes", "default")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.yaml"), []byte("execution:\n  concurrency:\n    max_concurrent_sessions: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Resolve(Input{Top: top})
	if err != nil {
		t.Fatal(err)
	}
	want := ".issue-orchestrator/config/: this settings folder is issue-orchestrator's and has no effect here: its YAML is not read"
	var notes []string
	for _, n := range s.Notes {
		notes = append(notes, n.String())
	}
	if !strings.Contains(strings.Join(notes, "\n"), want) {
		t.Errorf("notes %q lack %q", notes, want)
	}
	if err := os.WriteFile(filepath.Join(top, "issue-pilot.conf"), []byte("POLL_SECS=30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Migrate(top, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(m.Dropped, "\n"), want) {
		t.Errorf("migrate's dropped %q lack %q", m.Dropped, want)
	}
	if s, _ := Resolve(Input{Top: t.TempDir()}); len(s.Notes) != 0 {
		t.Errorf("notes without issue-orchestrator: %v", s.Notes)
	}
}

// TestLanePresetResumes: with LANES the claude preset's resume is each
// lane's: a lane that runs the preset's AGENT_CMD resumes with it, a lane
// with its own command (maybe another CLI) only as LANE_<id>_RESUME_CMD
// or AGENT_RESUME_CMD says.
func TestLanePresetResumes(t *testing.T) {
	t.Parallel()
	preset := DefaultAgent + " --resume {session}"
	for _, c := range []struct {
		name   string
		env    map[string]string
		a, b   string
		preset bool
	}{
		{"preset lane and own-command lane", map[string]string{"LANES": "a b", "LANE_b_CMD": "codex exec"}, preset, "", true},
		{"lane's own resume", map[string]string{"LANES": "a b", "LANE_b_CMD": "claude -p --model opus", "LANE_b_RESUME_CMD": "claude -p --model opus --resume {session}"}, preset, "claude -p --model opus --resume {session}", true},
		{"lane id as written", map[string]string{"LANES": "a b", "LANE_b_CMD": "x", "LANE_B_RESUME_CMD": "x --again {session}"}, preset, "x --again {session}", true},
		{"AGENT_RESUME_CMD for every lane", map[string]string{"LANES": "a b", "LANE_b_CMD": "x", "AGENT_RESUME_CMD": "y {session}"}, "y {session}", "y {session}", false},
		{"resume off", map[string]string{"LANES": "a b", "AGENT_RESUME_CMD": ""}, "", "", false},
		{"codex driver", map[string]string{"LANES": "a b", "AGENT_DRIVER": "codex"}, "", "", false},
	} {
		s, err := Resolve(Input{Scope: Run, Env: c.env, Top: t.TempDir()})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(s.Lanes) != 2 || s.Lanes[0].ResumeCmd != c.a || s.Lanes[1].ResumeCmd != c.b || s.ResumePreset != c.preset || s.ResumeCmd != c.env["AGENT_RESUME_CMD"] {
			t.Errorf("%s: lanes' resume %q, %q (preset %v, AGENT_RESUME_CMD %q), want %q, %q (preset %v)", c.name, s.Lanes[0].ResumeCmd, s.Lanes[1].ResumeCmd, s.ResumePreset, s.ResumeCmd, c.a, c.b, c.preset)
		}
	}
}
