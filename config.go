package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// DefaultAgent is Claude Code in headless mode.
const DefaultAgent = "claude -p --permission-mode bypassPermissions --output-format stream-json --verbose"

// ConfigFile is the per-repository settings file at the repository root.
const ConfigFile = "claudopilot.config"

// knob is one setting: its environment name (also its name in
// claudopilot.config), its flag, its default and what it means.
type knob struct {
	env, flag, def, help string
	kind                 string // "int", "bool", "string", "seconds"
}

func runKnobs() []knob {
	return []knob{
		{"MAX_PARALLEL", "max-parallel", "3", "agents running at once", "int"},
		{"BASE_BRANCH", "base", "", "branch to merge into (default: the current branch; main and master only when named)", "string"},
		{"GATE_CMD", "gate", "true", "command that must pass in a phase's worktree before it merges", "string"},
		{"WORKTREE_PREPARE_CMD", "prepare", "", "command run once in each new worktree (install deps, …)", "string"},
		{"AGENT_CMD", "agent", DefaultAgent, `agent command, run with sh -c; "script" runs each doc's first sh block`, "string"},
		{"SUPERVISOR_CMD", "supervisor", "", "repair supervisor command (default: AGENT_CMD)", "string"},
		{"MAX_SUPERVISOR_ATTEMPTS_PER_PHASE", "max-supervisor-attempts", "2", "repair runs per failed phase", "int"},
		{"KEEP_GOING", "keep-going", "0", "park failed phases as [blocked] and go on with the rest", "bool"},
		{"POLL_SECONDS", "poll-seconds", "5", "how often outside state is re-read (the loop itself is event-driven)", "seconds"},
		{"IGNORE_LOOP_CHECKPOINTS", "ignore-checkpoints", "0", "do not stop at LOOP-CHECKPOINT markers", "bool"},
		{"STUCK_TIMEOUT", "stuck-timeout", "0", "seconds without output before an agent is stopped (0: off)", "seconds"},
		{"AGENT_TIMEOUT", "agent-timeout", "0", "wall-clock seconds per agent run (0: off)", "seconds"},
		{"DEFAULT_RATE_LIMIT_SLEEP", "rate-limit-sleep", "3600", "seconds to wait after a rate limit with no hint", "seconds"},
		{"TRANSIENT_API_MAX_RETRIES", "transient-retries", "10", "retries of passing API errors before they count as a failure", "int"},
		{"LOG_CAP_MB", "log-cap-mb", "50", "largest log kept per agent run, in MiB (the tail is kept)", "int"},
		{"LOCKFILE_CMD", "lockfile-cmd", "", "command that regenerates lockfiles when they are all a merge conflicts on (default: go mod tidy, npm/pnpm/yarn/cargo by file)", "string"},
	}
}

// settings are the resolved knobs, keyed by environment name, with where
// each value came from (for doctor and errors).
type settings struct {
	val    map[string]string
	source map[string]string // "flag", "env", "claudopilot.config:LINE", "manifest", "default"
}

func (s settings) str(k string) string { return s.val[k] }

func (s settings) int(k string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s.val[k]))
	if err != nil || n < 0 {
		return 0, usageErrorf("%s=%q from %s: want a whole number ≥ 0", k, s.val[k], s.source[k])
	}
	return n, nil
}

func (s settings) bool(k string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s.val[k])) {
	case "1", "true", "yes", "on":
		return true, nil
	case "", "0", "false", "no", "off":
		return false, nil
	}
	return false, usageErrorf("%s=%q from %s: want 1 or 0", k, s.val[k], s.source[k])
}

func (s settings) seconds(k string) (time.Duration, error) {
	v := strings.TrimSpace(s.val[k])
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
		return time.Duration(f * float64(time.Second)), nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return d, nil
	}
	return 0, usageErrorf("%s=%q from %s: want seconds", k, s.val[k], s.source[k])
}

// addKnobFlags declares one flag per knob. Bool knobs are boolean flags.
func addKnobFlags(fs *pflag.FlagSet, ks []knob) {
	for _, k := range ks {
		help := fmt.Sprintf("%s [%s]", k.help, k.env)
		if k.kind == "bool" {
			fs.Bool(k.flag, false, help)
			continue
		}
		def := k.def
		fs.String(k.flag, def, help)
	}
}

// resolve applies the precedence: flags, then environment, then
// claudopilot.config, then the manifest's **Gate:**/**Prepare:** lines,
// then defaults.
func resolveWith(fs flagLookup, ks []knob, env map[string]string, file map[string]fileValue, manifest map[string]string) settings {
	s := settings{val: map[string]string{}, source: map[string]string{}}
	for _, k := range ks {
		switch {
		case fs.Changed(k.flag):
			v, _ := fs.GetString(k.flag)
			if k.kind == "bool" {
				b, _ := fs.GetBool(k.flag)
				v = "0"
				if b {
					v = "1"
				}
			}
			s.val[k.env], s.source[k.env] = v, "--"+k.flag
		case hasEnv(env, k.env):
			s.val[k.env], s.source[k.env] = env[k.env], "the environment"
		case file[k.env].set:
			s.val[k.env], s.source[k.env] = file[k.env].v, file[k.env].where
		case manifest[k.env] != "":
			s.val[k.env], s.source[k.env] = manifest[k.env], "the manifest"
		default:
			s.val[k.env], s.source[k.env] = k.def, "the default"
		}
	}
	return s
}

func hasEnv(env map[string]string, k string) bool {
	_, ok := env[k]
	return ok
}

type fileValue struct {
	v     string
	where string
	set   bool
}

// readConfigFile reads KEY=VALUE lines. It is never run as shell: no
// expansion, no commands; one pair of surrounding quotes is dropped.
func readConfigFile(path string, ks []knob) (map[string]fileValue, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, k := range ks {
		known[k.env] = true
	}
	out := map[string]fileValue{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	line := 0
	var bad []string
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		t = strings.TrimPrefix(t, "export ")
		k, v, ok := strings.Cut(t, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			bad = append(bad, fmt.Sprintf("%s:%d: want KEY=VALUE", path, line))
			continue
		}
		if !known[k] {
			bad = append(bad, fmt.Sprintf("%s:%d: unknown setting %s", path, line, k))
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			v = v[1 : len(v)-1]
		}
		out[k] = fileValue{v: v, where: fmt.Sprintf("%s:%d", ConfigFile, line), set: true}
	}
	if len(bad) > 0 {
		return nil, usageErrorf("%s", strings.Join(bad, "\n"))
	}
	return out, nil
}

// checkKnobs validates the values of every knob in s by its kind, so a bad
// flag is reported as misuse before anything else is looked at.
func checkKnobs(s settings, ks []knob, only func(knob) bool) error {
	for _, k := range ks {
		if only != nil && !only(k) {
			continue
		}
		var err error
		switch k.kind {
		case "int":
			_, err = s.int(k.env)
		case "bool":
			_, err = s.bool(k.env)
		case "seconds":
			_, err = s.seconds(k.env)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
