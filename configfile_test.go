package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Claudopilot's claudopilot.config.sh is read as data: bash's quoting,
// export, comments, $REPO_ROOT and KEY="${KEY:-v}"; a line that needs a
// shell is an error naming file:line, and nothing in it ever runs.
func TestShellConfigAsData(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	marker := filepath.Join(top, "ran")
	sh := `#!/usr/bin/env bash
export MAX_ITER
export GATE_CMD='pnpm -s typecheck && pnpm -s test'   # trailing comment
export WORKTREE_PREPARE_CMD="pnpm install --prefer-offline"
MAX_PARALLEL=2
export MANIFEST="$REPO_ROOT/roadmap/EXECUTION-MANIFEST.md"
POLL_SECONDS="${POLL_SECONDS:-7}"
AGENT_TIMEOUT=1\2
LOCKFILE_REGEN_CMD="echo \"regen\" \$x"
MAX_ITER=500
STUCK_TIMEOUT=$(touch ` + marker + `)
AGENT_CMD=` + "`touch " + marker + "`" + `
BUILD_CMD=make build
BOOTSTRAP_CMD="npm ci; $HOME/x"
DEFAULT_RATE_LIMIT_SLEEP=1; touch ` + marker + `
source ./other.sh
LOG_CAP_MB=${OTHER:-3}
TRANSIENT_API_MAX_RETRIES="unterminated
`
	if err := os.WriteFile(filepath.Join(top, "claudopilot.config.sh"), []byte(sh), 0o644); err != nil {
		t.Fatal(err)
	}
	vals, notes, err := readConfig(top, runKnobs())
	for k, want := range map[string]string{
		"GATE_CMD":             "pnpm -s typecheck && pnpm -s test",
		"WORKTREE_PREPARE_CMD": "pnpm install --prefer-offline",
		"MAX_PARALLEL":         "2",
		"POLL_SECONDS":         "7",
		"AGENT_TIMEOUT":        "12",
		"LOCKFILE_CMD":         `echo "regen" $x`,
		"MAX_ITER":             "500",
	} {
		if got := vals[k]; got.v != want || !got.set {
			t.Errorf("%s = %q (set %v), want %q", k, got.v, got.set, want)
		}
	}
	if w := vals["GATE_CMD"].where; w != "claudopilot.config.sh:3" {
		t.Errorf("GATE_CMD from %q", w)
	}
	if len(notes) != 1 || notes[0].key != "MANIFEST" || notes[0].where != "claudopilot.config.sh:6" {
		t.Errorf("notes = %v, want MANIFEST's", notes)
	}
	var ce *ConfigError
	if !errors.As(err, &ce) || exitCode(err, nil) != exitInvalid {
		t.Fatalf("err = %v, want a *ConfigError (exit 3)", err)
	}
	for _, line := range []string{"11", "12", "13", "14", "15", "16", "17", "18"} {
		if !strings.Contains(err.Error(), "claudopilot.config.sh:"+line+": ") {
			t.Errorf("line %s is not reported:\n%v", line, err)
		}
	}
	for _, k := range []string{"STUCK_TIMEOUT", "AGENT_CMD", "BUILD_CMD", "BOOTSTRAP_CMD", "DEFAULT_RATE_LIMIT_SLEEP", "LOG_CAP_MB", "TRANSIENT_API_MAX_RETRIES"} {
		if vals[k].set {
			t.Errorf("%s was taken from a line that needs a shell: %q", k, vals[k].v)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the file was run as shell")
	}
}

// .claudopilot/config.json: camelCase keys, booleans and numbers; below
// claudopilot.config and above the shell files.
func TestJSONConfigAndFileOrder(t *testing.T) {
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
	write(".claudopilot/config.json", `{"gateCmd": "make check", "maxParallel": 4, "keepGoing": true,
		"ignoreLoopCheckpoints": "1", "maxSupervisorAttemptsPerPhase": 3, "agentDriver": "codex", "isolated": false}`)
	write("claudopilot.config.sh", "GATE_CMD='from sh'\nWORKTREE_PREPARE_CMD='npm ci'\nMAX_PARALLEL=9\n")
	write(ConfigFile, "MAX_PARALLEL=5\n")
	vals, notes, err := readConfig(top, runKnobs())
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"GATE_CMD":                          "make check", // json beats the shell file
		"MAX_PARALLEL":                      "5",          // claudopilot.config beats json
		"KEEP_GOING":                        "1",
		"IGNORE_LOOP_CHECKPOINTS":           "1",
		"MAX_SUPERVISOR_ATTEMPTS_PER_PHASE": "3",
		"WORKTREE_PREPARE_CMD":              "npm ci", // only in the shell file
		"AGENT_DRIVER":                      "codex",
	} {
		if got := vals[k].v; got != want {
			t.Errorf("%s = %q (from %s), want %q", k, got, vals[k].where, want)
		}
	}
	if len(notes) != 1 || notes[0].key != "CLAUDOPILOT_ISOLATED" {
		t.Errorf("notes = %v", notes)
	}
	s := resolveWith(nilFlags{}, runKnobs(), nil, vals, nil)
	if got := s.str("AGENT_CMD"); got != "codex exec --json --dangerously-bypass-approvals-and-sandbox -" {
		t.Errorf("AGENT_CMD = %q (from %s)", got, s.source["AGENT_CMD"])
	}
	write(".claudopilot/config.json", `{"gateCmd": ["a"], "nope": 1}`)
	_, _, err = readConfig(top, runKnobs())
	if err == nil || !strings.Contains(err.Error(), ".claudopilot/config.json: gateCmd: want a string") || !strings.Contains(err.Error(), "unknown setting NOPE") {
		t.Errorf("err = %v", err)
	}
}

// AGENT_DRIVER and AGENT_MODEL build AGENT_CMD unless AGENT_CMD is set.
func TestAgentDriverPresets(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"AGENT_DRIVER": "claude", "AGENT_MODEL": "opus"}, DefaultAgent + " --model opus"},
		{map[string]string{"AGENT_MODEL": "sonnet"}, DefaultAgent + " --model sonnet"},
		{map[string]string{"AGENT_DRIVER": "codex", "AGENT_MODEL": "gpt-5 codex"}, "codex exec --json --dangerously-bypass-approvals-and-sandbox --model 'gpt-5 codex' -"},
		{map[string]string{"AGENT_DRIVER": "opencode", "AGENT_MODEL": "ollama/qwen2.5-coder"}, `opencode run --dangerously-skip-permissions --format json --model ollama/qwen2.5-coder "$(cat "$CLAUDOPILOT_PROMPT_FILE")"`},
		{map[string]string{"AGENT_DRIVER": "codex", "AGENT_CMD": "mine"}, "mine"},
		{map[string]string{}, DefaultAgent},
	} {
		s := resolveWith(nilFlags{}, runKnobs(), c.env, nil, nil)
		if got := s.str("AGENT_CMD"); got != c.want {
			t.Errorf("%v: AGENT_CMD = %q, want %q", c.env, got, c.want)
		}
	}
	// Claudopilot's LOCKFILE_REGEN_CMD is LOCKFILE_CMD's other name.
	al := resolveWith(nilFlags{}, runKnobs(), map[string]string{"LOCKFILE_REGEN_CMD": "pnpm i --lockfile-only"}, nil, nil)
	if got := al.str("LOCKFILE_CMD"); got != "pnpm i --lockfile-only" {
		t.Errorf("LOCKFILE_CMD from LOCKFILE_REGEN_CMD = %q (from %s)", got, al.source["LOCKFILE_CMD"])
	}
	s := resolveWith(nilFlags{}, runKnobs(), map[string]string{"AGENT_DRIVER": "cluade"}, nil, nil)
	if err := checkKnobs(s, runKnobs(), nil); err == nil || exitCode(err, nil) != exitUsage {
		t.Errorf("an unknown driver: %v", err)
	}
}
