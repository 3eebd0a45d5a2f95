package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/claudopilot/claudopilot/sandbox"
)

// DefaultAgent is Claude Code in headless mode.
const DefaultAgent = "claude -p --permission-mode bypassPermissions --output-format stream-json --verbose"

// ConfigFile is the per-repository settings file at the repository root.
const ConfigFile = "claudopilot.config"

// knob is one setting: its environment name (also its name in
// claudopilot.config), its flag, its default and what it means.
type knob struct {
	env, flag, def, help string
	kind                 string // "int", "bool", "string", "seconds", "regexp", "driver"
}

// knobAliases are Claudopilot's other names for settings, read from the
// environment and the files when the name itself is not set.
var knobAliases = map[string]string{"LOCKFILE_CMD": "LOCKFILE_REGEN_CMD"}

func runKnobs() []knob {
	return []knob{
		{"MAX_PARALLEL", "max-parallel", "3", "agents running at once", "int"},
		{"BASE_BRANCH", "base", "", "branch to merge into (default: the current branch; main and master only when named)", "string"},
		{"GATE_CMD", "gate", "true", "command that must pass in a phase's worktree before it merges", "string"},
		{"WORKTREE_PREPARE_CMD", "prepare", "", "command run once in each new worktree (install deps, …)", "string"},
		{"AGENT_CMD", "agent", DefaultAgent, `agent command, run with sh -c; "script" runs each doc's first sh block`, "string"},
		{"AGENT_DRIVER", "agent-driver", "", "build the agent command for claude, codex or opencode (when AGENT_CMD is not set)", "driver"},
		{"AGENT_MODEL", "model", "", "the model AGENT_DRIVER's command asks for (default: the tool's own)", "string"},
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
		{"LOCKFILE_CMD", "lockfile-cmd", "", "command that regenerates lockfiles when they are all a merge conflicts on (default: go mod tidy, npm/pnpm/yarn/bun/cargo by file)", "string"},
		{"MERGE_BATCH", "merge-batch", "8", "done phases landed together as one merge train, only its top gated, a red train bisected (docs/landing.md); 1: one at a time", "int"},
		{"MERGE_BATCH_GATE", "merge-batch-gate", "top", "top: gate a merge train's top (and its middle when red); each: gate every prefix side by side", "string"},
		{"STACK", "stack", "0", "start a phase on its one unmerged dependency's gated tip while that lands (speculative stacking, docs/landing.md)", "bool"},
		{"GATE_RETRIES", "gate-retries", "0", "reruns of a red merge gate before it counts as red; a green rerun is journaled as a flake", "int"},
		{"SECRET_SCAN", "secret-scan", "1", "scan what each merge adds for secrets (tokens, keys, .env-style assignments); 0 turns it off", "bool"},
		{"DERIVED_CONFLICT_FILES", "derived-conflict-files", "", "regular expression: a merge conflicting only on paths it matches is resolved with LOCKFILE_CMD (default: the known lockfiles)", "regexp"},
		{"BOOTSTRAP_CMD", "bootstrap", "", "command run once in the repository when the run starts (install, …); a failure is a warning", "string"},
		{"BUILD_CMD", "build", "", "command run once after BOOTSTRAP_CMD when the run starts; a failure is a warning", "string"},
		{"MAX_ITER", "max-iter", "0", "accepted for Claudopilot's files; not needed: a run ends when nothing can progress", "int"},
		{"REVIEW_CMD", "review", "", "reviewer command: turns on the review gate before landing (docs/review.md)", "string"},
		{"REVIEW_LENSES", "review-lenses", "correctness,security,scope,tests", "the reviewers' lenses, comma-separated", "string"},
		{"REVIEW_SKEPTICS", "review-skeptics", "1", "reviewers per review round", "int"},
		{"REVIEW_SLOTS", "review-slots", "1", "reviewers at once, reserved for them (never lent to workers)", "int"},
		{"REVIEW_MAX_ROUNDS", "review-max-rounds", "3", "review rounds before a still-blocked phase halts the run or is parked", "int"},
		{"RUN_MAX_COST_USD", "run-max-cost", "0", "dollars this run's agents may spend; reached: no new launches, exit 9 (0: no limit)", "dollars"},
		{"PHASE_MAX_COST_USD", "phase-max-cost", "0", "dollars one phase may spend over all its attempts; reached: parked with reason budget (0: no limit)", "dollars"},
		{"NOTIFY_CMD", "notify", "", "command run (sh -c) when a phase merges, parks or fails, the run ends, a cooldown starts or ends, a budget is reached, or the run is paused or resumed; the message is in $CLAUDOPILOT_NOTIFY_MSG, the event as JSON on stdin", "string"},
		{"LISTEN", "listen", "", "serve the web page and JSON API on HOST:PORT, e.g. 127.0.0.1:7777 (docs/web.md; default: off)", "string"},
		{"LISTEN_PUBLIC", "listen-public", "0", "allow --listen on an address that is not loopback (still token-only)", "bool"},
		{"AGENT_RESUME_CMD", "resume-cmd", "", `command that relaunches a worker in its agent session after a rate limit or a crash; {session} is the session id (e.g. "claude -p --resume {session}")`, "string"},
		{"SANDBOX", "sandbox", "off", "bwrap: agents run in a bubblewrap sandbox that can write only their worktree (docs/sandbox.md); off: unconfined", "sandbox"},
		{"SANDBOX_NET", "sandbox-net", "1", "network inside the sandbox (0: none)", "bool"},
		{"SANDBOX_GATE", "sandbox-gate", "0", "gates and WORKTREE_PREPARE_CMD run in the sandbox too", "bool"},
		{"SANDBOX_RW", "sandbox-rw", "", "more writable paths inside the sandbox, ':'-separated, absolute or ~/", "string"},
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
	least := minimum[k]
	n, err := strconv.Atoi(strings.TrimSpace(s.val[k]))
	if err != nil || n < least {
		return 0, usageErrorf("%s=%q from %s: want a whole number ≥ %d", k, s.val[k], s.source[k], least)
	}
	return n, nil
}

// minimum is the least value of the whole-number settings that are not
// counted from 0: one message states each rule, whatever the bad value.
var minimum = map[string]int{"MAX_PARALLEL": 1}

func (s settings) bool(k string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s.val[k])) {
	case "1", "true", "yes", "on":
		return true, nil
	case "", "0", "false", "no", "off":
		return false, nil
	}
	return false, usageErrorf("%s=%q from %s: want 1 or 0", k, s.val[k], s.source[k])
}

// dollars reads a cost limit: a number ≥ 0, "$" allowed.
func (s settings) dollars(k string) (float64, error) {
	v := strings.TrimPrefix(strings.TrimSpace(s.val[k]), "$")
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		return 0, usageErrorf("%s=%q from %s: want dollars ≥ 0, e.g. 25 or 2.50", k, s.val[k], s.source[k])
	}
	return f, nil
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
			fs.Bool(k.flag, k.def == "1", help)
			continue
		}
		if k.kind == "sandbox" {
			// --sandbox alone means bwrap; --sandbox=off turns it off.
			fs.String(k.flag, k.def, help)
			fs.Lookup(k.flag).NoOptDefVal = sandbox.Bwrap
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
		case knobAliases[k.env] != "" && hasEnv(env, knobAliases[k.env]):
			s.val[k.env], s.source[k.env] = env[knobAliases[k.env]], "the environment ("+knobAliases[k.env]+")"
		case file[k.env].set:
			s.val[k.env], s.source[k.env] = file[k.env].v, file[k.env].where
		case manifest[k.env] != "":
			s.val[k.env], s.source[k.env] = manifest[k.env], "the manifest"
		default:
			s.val[k.env], s.source[k.env] = k.def, "the default"
		}
	}
	applyDriver(s)
	return s
}

// agentDrivers are the commands AGENT_DRIVER builds, as Claudopilot ran
// them: headless, with the tool's permission prompts off (a phase runs
// unattended in its own worktree). %s is the model option, or nothing.
var agentDrivers = map[string]struct{ cmd, model string }{
	"claude":   {"claude -p --permission-mode bypassPermissions --output-format stream-json --verbose%s", " --model %s"},
	"codex":    {"codex exec --json --dangerously-bypass-approvals-and-sandbox%s -", " --model %s"},
	"opencode": {`opencode run --dangerously-skip-permissions --format json%s "$(cat "$CLAUDOPILOT_PROMPT_FILE")"`, " --model %s"},
}

// applyDriver builds AGENT_CMD from AGENT_DRIVER and AGENT_MODEL when
// AGENT_CMD itself was not set anywhere: a command given in full wins.
func applyDriver(s settings) {
	driver, model := strings.TrimSpace(s.val["AGENT_DRIVER"]), strings.TrimSpace(s.val["AGENT_MODEL"])
	if s.source["AGENT_CMD"] != "the default" || driver == "" && model == "" {
		return
	}
	src := s.source["AGENT_DRIVER"]
	if driver == "" {
		driver, src = "claude", s.source["AGENT_MODEL"]
	}
	d, ok := agentDrivers[driver]
	if !ok {
		return // checkKnobs reports it
	}
	opt := ""
	if model != "" {
		opt = fmt.Sprintf(d.model, shellQuote(model))
	}
	s.val["AGENT_CMD"] = fmt.Sprintf(d.cmd, opt)
	s.source["AGENT_CMD"] = "AGENT_DRIVER=" + driver + " from " + src
}

// shellQuote quotes a word for sh when it needs it.
func shellQuote(w string) string {
	if w != "" && strings.IndexFunc(w, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@+=", r))
	}) < 0 {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
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
		case "dollars":
			_, err = s.dollars(k.env)
		case "regexp":
			if v := s.val[k.env]; v != "" {
				if _, rerr := regexp.Compile(v); rerr != nil {
					err = usageErrorf("%s=%q from %s: not a regular expression: %v", k.env, v, s.source[k.env], rerr)
				}
			}
		case "sandbox":
			if _, perr := sandbox.ParseMode(s.val[k.env]); perr != nil {
				err = usageErrorf("%v (from %s)", perr, s.source[k.env])
			}
		case "driver":
			if v := strings.TrimSpace(s.val[k.env]); v != "" {
				if _, ok := agentDrivers[v]; !ok {
					err = usageErrorf("%s=%q from %s: want claude, codex or opencode (or set AGENT_CMD to the full command)", k.env, v, s.source[k.env])
				}
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// laneSetting is true for the lanes' and pacer's settings, which any
// command's config file may hold.
func laneSetting(k string) bool {
	if isLaneKey(k) {
		return true
	}
	for _, lk := range laneKnobs() {
		if lk.env == k {
			return true
		}
	}
	return false
}
