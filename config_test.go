package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Precedence: flags, then environment, then claudopilot.config, then the
// manifest's Gate/Prepare lines, then defaults.
func TestSettingsPrecedence(t *testing.T) {
	t.Parallel()
	ks := runKnobs()
	dir := t.TempDir()
	path := filepath.Join(dir, ConfigFile)
	cfg := "# comment\n\nMAX_PARALLEL=5\nGATE_CMD='make check'\nexport WORKTREE_PREPARE_CMD=\"npm ci\"\nAGENT_CMD=from-file\n"
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	file, _, err := readConfig(dir, ks)
	if err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	addKnobFlags(fs, ks)
	if err := fs.Parse([]string{"--max-parallel", "7", "--keep-going"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"MAX_PARALLEL": "6", "AGENT_CMD": "from-env"}
	manifest := map[string]string{"GATE_CMD": "from-manifest", "WORKTREE_PREPARE_CMD": "from-manifest"}
	s := resolveWith(fs, ks, env, file, manifest)
	for k, want := range map[string]string{
		"MAX_PARALLEL":         "7",          // flag beats env and file
		"AGENT_CMD":            "from-env",   // env beats file
		"GATE_CMD":             "make check", // file beats manifest; quotes dropped
		"WORKTREE_PREPARE_CMD": "npm ci",     // `export` accepted
		"KEEP_GOING":           "1",          // a bool flag
		"POLL_SECONDS":         "5",          // default
	} {
		if got := s.str(k); got != want {
			t.Errorf("%s = %q (from %s), want %q", k, got, s.source[k], want)
		}
	}
	if src := s.source["GATE_CMD"]; src != "claudopilot.config:4" {
		t.Errorf("GATE_CMD source = %q", src)
	}
	s = resolveWith(nilFlags{}, ks, nil, nil, manifest)
	if s.str("GATE_CMD") != "from-manifest" {
		t.Errorf("manifest gate not used: %q", s.str("GATE_CMD"))
	}
}

// A bad config file names the file and line and exits 3; it is never run
// as shell, and its good lines are still read.
func TestConfigFileErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, ConfigFile)
	marker := filepath.Join(dir, "ran")
	body := "MAX_PARALLEL=2\nNOT_A_KNOB=1\njust words\nGATE_CMD=$(touch " + marker + ")\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	vals, _, err := readConfig(dir, runKnobs())
	var ce *ConfigError
	if !errors.As(err, &ce) || exitCode(err, nil) != exitInvalid {
		t.Fatalf("err = %v, want a *ConfigError (exit 3)", err)
	}
	if vals["MAX_PARALLEL"].v != "2" || vals["GATE_CMD"].v != "$(touch "+marker+")" {
		t.Errorf("the good lines were not read: %v", vals)
	}
	for _, want := range []string{ConfigFile + ":2: unknown setting NOT_A_KNOB", ConfigFile + ":3: want KEY=VALUE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %q", want, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the config file was run as shell")
	}
	// Bad values are reported with where they came from.
	s := resolveWith(nilFlags{}, runKnobs(), map[string]string{"MAX_PARALLEL": "lots"}, nil, nil)
	if err := checkKnobs(s, runKnobs(), nil); err == nil || !strings.Contains(err.Error(), `MAX_PARALLEL="lots" from the environment`) {
		t.Fatalf("err = %v", err)
	}
}
