package settings

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/claudopilot/claudopilot/pacer"
	"github.com/claudopilot/claudopilot/roadmap"
)

// The other tools' names and forms this tool reads (docs/migrating.md):
// the tools it replaces called some settings otherwise, or wrote their
// values otherwise. Each is read as the setting it means, with one note
// ("read as …"), so a user switching over keeps the setting without a
// silent surprise.

// rename is another tool's name for a knob.
type rename struct {
	Old, New, Tool string
	// conv turns the old value into the new knob's, or says what is
	// wrong with it.
	conv func(string) (string, string)
}

func same(v string) (string, string) { return v, "" }

// msToSeconds reads issue-orchestrator's milliseconds as seconds.
func msToSeconds(v string) (string, string) {
	ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || ms < 0 {
		return "", "want milliseconds ≥ 0"
	}
	return strconv.FormatFloat(ms/1000, 'f', -1, 64), ""
}

var renames = []rename{
	{"POLL_SECS", "POLL_SECONDS", "issue-pilot", same},
	{"JANITOR_STALE_HOURS", "CLAIM_STALE_HOURS", "issue-pilot", same},
	{"POLL_MS", "POLL_SECONDS", "issue-orchestrator", msToSeconds},
}

// renameOf is the rename of another tool's name old.
func renameOf(old string) (rename, bool) {
	for _, r := range renames {
		if r.Old == old {
			return r, true
		}
	}
	return rename{}, false
}

// valueForms read another tool's way of writing a knob's value: issue-pilot
// wrote MERGE_METHOD as gh's flag (--merge, --squash, --rebase).
var valueForms = map[string]struct {
	tool string
	read func(string) (string, bool)
}{
	"MERGE_METHOD": {"issue-pilot", func(v string) (string, bool) {
		m, ok := strings.CutPrefix(strings.TrimSpace(v), "--")
		return m, ok && (m == "merge" || m == "squash" || m == "rebase")
	}},
}

// issuePilotOnly says what to do instead of one of issue-pilot's settings
// that mean nothing here ("" for a key issue-pilot did not have).
func issuePilotOnly(key string) string {
	const (
		scan    = "claudopilot's scanners and refill take SCANNER_CMD (a command printing candidate issues as JSON lines), SCANNER_FOCUS, SCANNER_LABEL, SCANNER_MAX_ISSUES, SCANNER_INTERVAL_MINUTES and REFILL_THRESHOLD (docs/queue.md)"
		release = "claudopilot promotes from the base along PROMOTE_TO (e.g. \"staging production\"), every PROMOTE_EVERY_HOURS, and announces each promotion to NOTIFY_CMD (docs/queue.md)"
		account = "a lane's account is LANE_<id>_CREDENTIALS"
		// usage is said of the settings issue-pilot's usage scripts
		// (bin/usage-claude.sh, bin/usage-codex.sh) read from its file.
		usage = "issue-pilot's usage scripts read it; kept as a lane's USAGE_CMD, such a script gets it in its command (LANE_<id>_USAGE_CMD='NAME=value bin/usage-codex.sh'), and gets the lane's LANE_<id>_CREDENTIALS as CLAUDE_CONFIG_DIR"
	)
	exact := map[string]string{
		"CODEX_ACCOUNTS":         scan,
		"ERROR_LOG_CMD":          scan,
		"JANITOR_WORKTREE_HOURS": "an issue's worktree goes when the issue ends; `claudopilot clean` removes what is left",
		"PR_WIP_LIMIT":           "MAX_PARALLEL (or the lanes' concurrency) bounds the work in flight",
		"STAGING_BRANCH":         release,
		"PROD_BRANCH":            release,
		"REPO_DIR":               "claudopilot works in the clone it runs in",
		"CLAUDE_ACCOUNTS":        account,
		"CLAUDE_CREDENTIALS":     usage,
		"CODEX_HOME":             usage,
		"CODEX_SESSIONS":         usage,
		"CODEX_SNAPSHOT_MAX_AGE": usage,
		"FORCE_MAX_DRIFT":        scan, // its refill's account pick (bin/refill.sh)
		"FORCE_MAX_USED":         scan,
		"STATUS_ACCOUNTS":        "the status page is `claudopilot status` and LISTEN (docs/web.md); usage is each lane's USAGE_CMD",
	}
	if h, ok := exact[key]; ok {
		return h
	}
	for _, p := range []struct{ prefix, hint string }{
		{"SCANNER_", scan},
		{"CAMPAIGN_", "a campaign is its issues labelled CAMPAIGN_LABEL_PREFIX<name> (worked first) and its goal file claudopilot/campaigns/<name>.md; there is no goal loop: file the campaign's issues with READY_LABEL"},
		{"PROMOTE_", release},
		{"ANNOUNCE_", release},
		{"PR_DOCTOR_", "red checks of an issue's pull request go to its supervisor"},
		{"ORCH_", account},
	} {
		if strings.HasPrefix(key, p.prefix) {
			return p.hint
		}
	}
	return ""
}

// pickRenamed takes knob k's value from another tool's name for it in the
// environment, below the knob's own name there and above the files.
func pickRenamed(k Knob, env map[string]string) (Value, *Note, *Problem, bool) {
	for _, r := range renames {
		v, ok := env[r.Old]
		if r.New != k.Env || !ok {
			continue
		}
		src := Source{Kind: FromEnv, Name: r.Old}
		nv, msg := r.conv(v)
		if msg != "" {
			return Value{}, nil, &Problem{Key: r.Old, Val: v, Src: src, Msg: msg}, false
		}
		return Value{Raw: nv, Src: src}, &Note{Where: src.String(), Key: r.Old + "=" + v, Tool: r.Tool, ReadAs: k.Env + "=" + nv}, nil, true
	}
	return Value{}, nil, nil, false
}

// readNotes are the notes of values read under another tool's name or in
// another tool's form; the value itself is made the knob's.
func (s *Settings) readNotes(files map[string]fileValue) {
	for _, k := range Knobs() {
		v := s.vals[k.Env]
		if f, ok := files[k.Env]; ok && f.as != "" && v.Src == f.src {
			r, _ := renameOf(f.as)
			s.Notes = append(s.Notes, Note{Where: f.src.String(), Key: f.as, Tool: r.Tool, ReadAs: k.Env + "=" + f.v})
		}
		if form, ok := valueForms[k.Env]; ok {
			if nv, ok := form.read(v.Raw); ok {
				s.Notes = append(s.Notes, Note{Where: v.Src.String(), Key: k.Env + "=" + v.Raw, Tool: form.tool, ReadAs: k.Env + "=" + nv})
				v.Raw = nv
				s.vals[k.Env] = v
			}
		}
	}
}

// laneProblems checks every LANE_<id>_<KEY> set in the environment or a
// file against LANES: a key no lane has, or a lane LANES does not name,
// is an error naming where it was set, with the closest valid name.
func laneProblems(lanes []pacer.LaneConfig, env map[string]string, files map[string]fileValue) []Problem {
	valid := map[string]bool{}
	for _, l := range lanes {
		for _, k := range pacer.Keys() {
			for _, n := range pacer.Names(l.ID, k.Name) {
				valid[n] = true
			}
		}
	}
	var probs []Problem
	check := func(name string, src Source, unreadable bool) {
		if valid[name] {
			return
		}
		msg := "unknown setting " + name
		switch {
		case len(lanes) == 0:
			msg += ": LANES is not set (docs/lanes.md)"
		default:
			if best := roadmap.Closest(name, slices.Sorted(maps.Keys(valid))); best != "" {
				msg += " (did you mean " + best + "?)"
			} else {
				msg += " (LANES: " + strings.Join(laneIDs(lanes), " ") + ")"
			}
		}
		if !unreadable {
			msg += " (from " + src.String() + ")"
		}
		probs = append(probs, Problem{Src: src, Msg: msg, Unreadable: unreadable})
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if strings.HasPrefix(name, "LANE_") {
			check(name, files[name].src, true)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(env)) {
		if strings.HasPrefix(name, "LANE_") {
			check(name, Source{Kind: FromEnv}, false)
		}
	}
	return probs
}

func laneIDs(ls []pacer.LaneConfig) []string {
	var ids []string
	for _, l := range ls {
		ids = append(ids, l.ID)
	}
	return ids
}

// credentialFolders makes each lane's CREDENTIALS the folder of its
// account: issue-pilot named the account's .credentials.json, whose folder
// is the configuration folder the agent CLI reads. It must be absolute
// and exist.
func credentialFolders(lanes []pacer.LaneConfig) []Problem {
	var probs []Problem
	for i, l := range lanes {
		c := l.Credentials
		if c == "" {
			continue
		}
		name := l.Name("CREDENTIALS")
		if !filepath.IsAbs(c) {
			probs = append(probs, Problem{Msg: fmt.Sprintf("%s=%q: want an absolute path (the account's configuration folder, or its .credentials.json)", name, c)})
			continue
		}
		st, err := os.Stat(c)
		if err != nil {
			probs = append(probs, Problem{Msg: fmt.Sprintf("%s=%q: %v", name, c, err)})
			continue
		}
		if !st.IsDir() {
			c = filepath.Dir(c)
		}
		lanes[i].Credentials = filepath.Clean(c)
	}
	return probs
}
