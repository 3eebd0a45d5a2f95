package pacer

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/claudopilot/claudopilot/internal/lazy"
)

// LaneConfig is a lane as the user configured it: what it runs and how it
// is paced.
type LaneConfig struct {
	Lane
	Cmd           string // LANE_<id>_CMD, default AGENT_CMD
	SupervisorCmd string // LANE_<id>_SUPERVISOR_CMD, default SUPERVISOR_CMD, then Cmd
	UsageCmd      string // LANE_<id>_USAGE_CMD, default USAGE_CMD
	Model         string // LANE_<id>_MODEL, default MODEL
	Fallback      string // LANE_<id>_FALLBACK: the lane used while this one cools down
	Label         string // LANE_<id>_LABEL: the lane's name in messages (issue-pilot's), default its id
	// ResumeCmd is LANE_<id>_RESUME_CMD, default AGENT_RESUME_CMD: the
	// command that carries on in a worker's session ({session}) on this
	// lane, whose CLI made the session. The settings fill in the claude
	// preset's for a lane that runs the preset's AGENT_CMD.
	ResumeCmd string
	// Credentials is LANE_<id>_CREDENTIALS: the folder of the lane's
	// account's agent CLI configuration (CLAUDE_CONFIG_DIR), "" for the
	// user's own. It is a path, not a secret.
	Credentials string
	// Attach is LANE_<id>_ATTACH (ATTACH, the global knob, turns every
	// lane's on in the runner, not here): its agents run on a
	// pseudo-terminal that `claudopilot attach` shows.
	Attach bool
	// Names are the settings' names as they were read (LANE_t_CMD or
	// LANE_T_CMD), by key, for messages.
	Names map[string]string
}

// Name is the name key was read under, or its canonical name.
func (lc LaneConfig) Name(key string) string {
	if n := lc.Names[key]; n != "" {
		return n
	}
	return EnvName(lc.ID, key)
}

// Key is one per-lane setting: its name after LANE_<id>_, the global
// setting it defaults to, and its built-in default.
type Key struct {
	Name, Global, Default, Help string
}

// Keys lists every per-lane setting. LANE_<id>_<Name> overrides the
// global <Global>, which overrides Default.
func Keys() []Key {
	return []Key{
		{"CMD", "AGENT_CMD", "", "agent command of the lane"},
		{"SUPERVISOR_CMD", "SUPERVISOR_CMD", "", "repair supervisor command of the lane (default: its CMD)"},
		{"RESUME_CMD", "AGENT_RESUME_CMD", "", "command that carries on in a worker's session on the lane, {session} its id (default: AGENT_RESUME_CMD; for a lane that runs the claude preset's AGENT_CMD, that command --resume {session})"},
		{"MODE", "MODE", "always", "always, window or off"},
		{"CONCURRENCY", "DEFAULT_CONCURRENCY", "3", "agents an always lane runs at once"},
		{"USAGE_CMD", "USAGE_CMD", "", "prints <pct_used> <secs_until_reset> [<five_hour_pct> <five_hour_secs>]"},
		{"MIN_CONCURRENCY", "MIN_CONCURRENCY", "1", "least a window lane behind pace runs"},
		{"MAX_CONCURRENCY", "MAX_CONCURRENCY", "6", "most a window lane runs"},
		{"PACE_TOLERANCE_PCT", "PACE_TOLERANCE_PCT", "5", "how far behind the line before a window lane catches up"},
		{"CATCHUP_HOURS", "CATCHUP_HOURS", "4", "hours to make up the gap in"},
		{"BURN_PCT_PER_WORKER_HOUR", "BURN_PCT_PER_WORKER_HOUR", "2", "window % one worker uses in an hour"},
		{"FIVE_HOUR_THROTTLE_PCT", "FIVE_HOUR_THROTTLE_PCT", "85", "five-hour use at which the lane is throttled"},
		{"FIVE_HOUR_THROTTLE_CAP", "FIVE_HOUR_THROTTLE_CAP", "1", "most a throttled lane runs"},
		{"HARD_STOP_PCT", "HARD_STOP_PCT", "98", "weekly use at which the lane stops"},
		{"MODEL", "MODEL", "", "model name, for the lane's presets and the ledger"},
		{"FALLBACK", "", "", "lane to use while this one is in a rate-limit cooldown"},
		{"LABEL", "", "", "the lane's name in messages (default: its id)"},
		{"CREDENTIALS", "", "", "the lane's account: its agent CLI's configuration folder, given to the agent as CLAUDE_CONFIG_DIR (a .credentials.json names its folder)"},
		{"ATTACH", "", "0", "run its agents on a pseudo-terminal that `claudopilot attach` shows (for CLIs that need a TTY; ATTACH=1 does it for every lane)"},
	}
}

var laneID = lazy.Regexp(`^[A-Za-z][A-Za-z0-9_-]*$`)

// EnvName is the canonical name of a lane's setting: LANE_<ID>_<KEY>,
// with the id upper-cased and '-' as '_' so it is a valid environment
// name. The id as written in LANES is read too (Names).
func EnvName(id, key string) string {
	return "LANE_" + strings.ToUpper(strings.ReplaceAll(id, "-", "_")) + "_" + key
}

// Names are the names a lane's setting is read under: LANE_<id>_<KEY>
// with the id as written in LANES (issue-pilot's form, LANE_claude_CMD),
// and the canonical EnvName when it differs.
func Names(id, key string) []string {
	written := "LANE_" + strings.ReplaceAll(id, "-", "_") + "_" + key
	if c := EnvName(id, key); c != written {
		return []string{written, c}
	}
	return []string{written}
}

// Parse reads the lanes named in lanes (LANES, space- or comma-separated)
// through get, which answers a setting's value and whether it is set.
// Errors name the setting.
func Parse(lanes string, get func(string) (string, bool)) ([]LaneConfig, error) {
	ids := strings.FieldsFunc(lanes, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' })
	seen := map[string]bool{}
	var out []LaneConfig
	for _, id := range ids {
		if !laneID().MatchString(id) {
			return nil, fmt.Errorf("LANES: lane id %q: want a letter, then letters, digits, - or _", id)
		}
		if seen[strings.ToLower(id)] {
			return nil, fmt.Errorf("LANES: lane %q is named twice", id)
		}
		seen[strings.ToLower(id)] = true
		lc, err := parseLane(id, get)
		if err != nil {
			return nil, err
		}
		out = append(out, lc)
	}
	for _, lc := range out {
		if lc.Fallback != "" && !seen[strings.ToLower(lc.Fallback)] {
			return nil, fmt.Errorf("%s=%s: no such lane in LANES", lc.Name("FALLBACK"), lc.Fallback)
		}
		if strings.EqualFold(lc.Fallback, lc.ID) {
			return nil, fmt.Errorf("%s: a lane cannot fall back on itself", lc.Name("FALLBACK"))
		}
	}
	return out, nil
}

func parseLane(id string, get func(string) (string, bool)) (LaneConfig, error) {
	val := map[string]string{}
	where := map[string]string{}
	names := map[string]string{}
	for _, k := range Keys() {
		v, from := k.Default, "the default"
		if k.Global != "" {
			if g, ok := get(k.Global); ok {
				v, from = g, k.Global
			}
		}
		var set []string // the names it is set under
		for _, name := range Names(id, k.Name) {
			if l, ok := get(name); ok {
				if len(set) > 0 && strings.TrimSpace(l) != strings.TrimSpace(v) {
					return LaneConfig{}, fmt.Errorf("%s and %s are both set, to different values: keep one", set[0], name)
				}
				v, from = l, name
				set = append(set, name)
			}
		}
		if len(set) > 0 {
			names[k.Name] = set[0]
		}
		val[k.Name], where[k.Name] = strings.TrimSpace(v), from
	}
	name := func(key string) string {
		if n := names[key]; n != "" {
			return n
		}
		return EnvName(id, key)
	}
	lc := LaneConfig{Cmd: val["CMD"], SupervisorCmd: val["SUPERVISOR_CMD"], ResumeCmd: val["RESUME_CMD"], UsageCmd: val["USAGE_CMD"], Model: val["MODEL"], Fallback: val["FALLBACK"],
		Label: val["LABEL"], Credentials: val["CREDENTIALS"], Names: names}
	lc.ID = id
	if lc.Label == "" {
		lc.Label = id
	}
	if lc.Cmd == "" {
		return lc, fmt.Errorf("%s: lane %s has no command (set it, or AGENT_CMD)", name("CMD"), id)
	}
	if lc.SupervisorCmd == "" {
		lc.SupervisorCmd = lc.Cmd
	}
	switch m := Mode(strings.ToLower(val["MODE"])); m {
	case Always, WindowPaced, Off:
		lc.Mode = m
	default:
		return lc, fmt.Errorf("%s=%q (from %s): want always, window or off", name("MODE"), val["MODE"], where["MODE"])
	}
	ints := []struct {
		key string
		dst *int
	}{{"CONCURRENCY", &lc.Concurrency}, {"MIN_CONCURRENCY", &lc.MinConcurrency}, {"MAX_CONCURRENCY", &lc.MaxConcurrency}, {"FIVE_HOUR_THROTTLE_CAP", &lc.FiveHourThrottleCap}}
	for _, f := range ints {
		n, err := strconv.Atoi(val[f.key])
		if err != nil || n < 0 {
			return lc, fmt.Errorf("%s=%q (from %s): want a whole number ≥ 0", name(f.key), val[f.key], where[f.key])
		}
		*f.dst = n
	}
	floats := []struct {
		key string
		dst *float64
	}{{"PACE_TOLERANCE_PCT", &lc.PaceTolerancePct}, {"CATCHUP_HOURS", &lc.CatchupHours}, {"BURN_PCT_PER_WORKER_HOUR", &lc.BurnPctPerWorkerHour}, {"FIVE_HOUR_THROTTLE_PCT", &lc.FiveHourThrottlePct}, {"HARD_STOP_PCT", &lc.HardStopPct}}
	for _, f := range floats {
		x, err := strconv.ParseFloat(val[f.key], 64)
		if err != nil || x < 0 {
			return lc, fmt.Errorf("%s=%q (from %s): want a number ≥ 0", name(f.key), val[f.key], where[f.key])
		}
		*f.dst = x
	}
	if lc.MinConcurrency > lc.MaxConcurrency {
		return lc, fmt.Errorf("%s=%d is above %s=%d", name("MIN_CONCURRENCY"), lc.MinConcurrency, name("MAX_CONCURRENCY"), lc.MaxConcurrency)
	}
	attach, err := laneBool(name("ATTACH"), val["ATTACH"], where["ATTACH"])
	lc.Attach = attach
	return lc, err
}

// laneBool reads a lane's switch: 1/true/yes/on or 0/false/no/off; name
// and where say whence, for the error.
func laneBool(name, v, where string) (bool, error) {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off", "":
		return false, nil
	}
	return false, fmt.Errorf("%s=%q (from %s): want 1 or 0", name, v, where)
}

// ParseUsage reads a USAGE_CMD's output: `<pct_used> <secs_until_reset>`,
// optionally followed by `<five_hour_pct> <five_hour_secs>`. Anything
// else is an unreadable reading (OK false), never a zero.
func ParseUsage(out string) Usage {
	f := strings.Fields(out)
	if len(f) != 2 && len(f) != 4 {
		return Usage{}
	}
	var x [4]float64
	for i, s := range f {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0 {
			return Usage{}
		}
		x[i] = v
	}
	u := Usage{OK: true, PctUsed: x[0], SecsToReset: x[1]}
	if len(f) == 4 {
		u.HasFiveHour, u.FiveHourPct, u.FiveHourSecs = true, x[2], x[3]
	}
	return u
}

// ParseProbe reads a RESOURCE_PROBE_CMD's output: `<cores> <load5>
// <mem_available_mb>`.
func ParseProbe(out string) (cores, load5, memMB float64, ok bool) {
	f := strings.Fields(out)
	if len(f) != 3 {
		return 0, 0, 0, false
	}
	var x [3]float64
	for i, s := range f {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0 {
			return 0, 0, 0, false
		}
		x[i] = v
	}
	return x[0], x[1], x[2], true
}
