package settings

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/claudopilot/claudopilot/pacer"
	"github.com/claudopilot/claudopilot/protect"
	"github.com/claudopilot/claudopilot/roadmap"
)

// ConfigFile is claudopilot's own settings file at the repository root.
const ConfigFile = "claudopilot.config"

// sources are the settings files read at the repository root, highest
// precedence first: claudopilot's own file, then Claudopilot's (1.0's
// JSON, then the shell files of earlier versions), so a migrating
// repository keeps its gate and agent without a change.
var sources = []struct {
	rel    string
	format string // "kv": claudopilot.config; "sh": a Claudopilot shell file; "json"
}{
	{ConfigFile, "kv"},
	{".claudopilot/config.json", "json"},
	{".claudopilot/config.sh", "sh"},
	{"claudopilot.config.sh", "sh"},
}

// Files lists every file the settings model reads under the repository
// root top, highest precedence first, whether or not it exists: what an
// agent must not be able to change (docs/landing.md).
func Files(top string) []string {
	out := make([]string, len(sources))
	for i, src := range sources {
		out[i] = filepath.Join(top, filepath.FromSlash(src.rel))
	}
	return out
}

// Protected is the settings' part of the files no landing may change
// (docs/landing.md): every file the settings model reads under the
// repository root top (Files: a source added there is protected with it)
// and PROTECTED_PATHS' globs; Off for PROTECTED_PATHS=none. The engine
// adds what the other readers declare.
func (s *Settings) Protected(top string) protect.Set {
	rules := slices.Clone(s.ProtectedPaths.Rules)
	for _, f := range Files(top) {
		rules = append(rules, protect.File(top, f, "a settings file, read by the settings model")...)
	}
	return protect.Set{Off: s.ProtectedPaths.Off, Rules: rules}
}

// claudopilotOnly are Claudopilot's settings that mean nothing here. They
// are accepted in its files so they run unchanged, with a note saying what
// to do instead; each value is that note.
var claudopilotOnly = map[string]string{
	"ROADMAP_DIR":               "give the roadmap folder as run's argument (default: ./roadmap, else ./.claudopilot/roadmap)",
	"MANIFEST":                  "give the roadmap folder as run's argument",
	"PROMPT_FILE":               "put worker.md in <roadmap>/prompts/ or .claudopilot/prompts/ (README: the agent contract)",
	"SUPERVISOR_PROMPT_FILE":    "put supervisor.md in <roadmap>/prompts/ or .claudopilot/prompts/",
	"WORKER_PROJECT_PROMPT":     "put worker.project.md in <roadmap>/prompts/ or .claudopilot/prompts/",
	"SUPERVISOR_PROJECT_PROMPT": "put supervisor.project.md in <roadmap>/prompts/ or .claudopilot/prompts/",
	"CLAUDOPILOT_ISOLATED":      "agents run in worktrees of this repository; there is no container mode",
	"WORKER_IMAGE":              "agents run in worktrees of this repository; there is no container mode",
	"USAGE_WINDOW_SECONDS":      "rate limits are read from the agent's output instead",
	"MAX_TICKS_PER_WINDOW":      "rate limits are read from the agent's output instead",
	"USAGE_THRESHOLD_PCT":       "rate limits are read from the agent's output instead",
	"RETRY_TRANSIENT_API":       "set TRANSIENT_API_MAX_RETRIES=0 to turn retries off",
	"LOG_FILE":                  "logs are under .claudopilot/logs/<id>/",
	"RENDER_STREAM":             "claude's stream-json is rendered by claudopilot itself",
	"RENDER_STREAM_OPENCODE":    "opencode's output is logged as it comes",
	"BASE_BRANCH_EXPLICIT":      "naming the branch is enough: set BASE_BRANCH (or pass --base)",
}

// Note is a setting that was read and has no effect here.
type Note struct{ Where, Key, Hint string }

func (n Note) String() string {
	return fmt.Sprintf("%s: %s is Claudopilot's and has no effect here: %s", n.Where, n.Key, n.Hint)
}

// fileValue is a value a settings file sets, and where.
type fileValue struct {
	v   string
	src Source
}

// readFiles reads every settings file at the repository root top. For
// each key the first file (in sources order) that sets it wins. The
// values of the good lines are returned with the problems of the bad ones.
func readFiles(top string) (map[string]fileValue, []Note, []Problem) {
	known := map[string]string{} // name or alias → knob name
	for _, k := range Knobs() {
		known[k.Env] = k.Env
		if al := Aliases[k.Env]; al != "" {
			known[al] = k.Env
		}
	}
	out := map[string]fileValue{}
	var notes []Note
	var bad []Problem
	for _, src := range sources {
		path := filepath.Join(top, filepath.FromSlash(src.rel))
		b, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			bad = append(bad, Problem{Src: Source{Kind: FromFile, Name: src.rel}, Msg: err.Error(), Unreadable: true})
			continue
		}
		var ents []configEntry
		switch src.format {
		case "json":
			ents = parseJSONConfig(b)
		case "sh":
			ents = parseShellConfig(b, top)
		default:
			ents = parseKVConfig(b)
		}
		for _, e := range ents {
			where := Source{Kind: FromFile, Name: src.rel, Line: e.line}
			if e.err != "" {
				bad = append(bad, Problem{Src: where, Msg: e.err, Unreadable: true})
				continue
			}
			name, ok := known[e.key]
			if !ok && isLaneKey(e.key) {
				name, ok = e.key, true // LANE_<id>_<KEY>
			}
			switch {
			case ok:
			case src.format != "kv" && claudopilotOnly[e.key] != "":
				notes = append(notes, Note{Where: where.String(), Key: e.key, Hint: claudopilotOnly[e.key]})
				continue
			default:
				bad = append(bad, Problem{Src: where, Msg: "unknown setting " + e.key + suggestKey(e.key, known), Unreadable: true})
				continue
			}
			if _, seen := out[name]; !seen {
				out[name] = fileValue{v: e.val, src: where}
			}
		}
	}
	return out, notes, bad
}

// isLaneKey is true for a per-lane setting, LANE_<id>_<KEY>.
func isLaneKey(k string) bool {
	if !strings.HasPrefix(k, "LANE_") {
		return false
	}
	for _, pk := range pacer.Keys() {
		if strings.HasSuffix(k, "_"+pk.Name) && len(k) > len("LANE_")+len(pk.Name)+1 {
			return true
		}
	}
	return false
}

// suggestKey names the closest known setting, for a misspelt one.
func suggestKey(k string, known map[string]string) string {
	if best := roadmap.Closest(k, slices.Sorted(maps.Keys(known))); best != "" {
		return " (did you mean " + best + "?)"
	}
	return ""
}

type configEntry struct {
	line     int
	key, val string
	err      string
}

// parseKVConfig reads claudopilot.config: KEY=VALUE lines (an `export `
// before is allowed), # comments; the value is the rest of the line with
// one pair of surrounding quotes dropped. It is data, never shell: a
// command value such as GATE_CMD is kept as written and run later by sh.
func parseKVConfig(b []byte) []configEntry {
	var out []configEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		t = strings.TrimPrefix(t, "export ")
		k, v, ok := strings.Cut(t, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			out = append(out, configEntry{line: line, err: "want KEY=VALUE"})
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			v = v[1 : len(v)-1]
		}
		out = append(out, configEntry{line: line, key: k, val: v})
	}
	return out
}

var shellName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// parseShellConfig reads a Claudopilot claudopilot.config.sh as data: the
// assignments bash would make (KEY=VALUE or export KEY=VALUE, with bash's
// quoting), never running it. A line whose meaning needs a shell (a
// command, $(...), backticks, a variable, ;, |, &&, a redirection) is an
// error. Two forms are read as data because their meaning is fixed:
// $REPO_ROOT, which Claudopilot set to the repository root before
// sourcing the file, and KEY="${KEY:-value}", which means value under a
// precedence where the environment already wins over the file.
func parseShellConfig(b []byte, top string) []configEntry {
	var out []configEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(t, "export"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			t = strings.TrimSpace(rest)
			if shellName.MatchString(t) {
				continue // `export NAME`: exports what an earlier line set
			}
		}
		k, v, ok := strings.Cut(t, "=")
		if !ok || !shellName.MatchString(k) {
			out = append(out, configEntry{line: line, err: "not a KEY=VALUE assignment: this line needs a shell to mean anything (claudopilot reads this file as data, never runs it)"})
			continue
		}
		val, err := shellValue(k, v, top)
		if err != "" {
			out = append(out, configEntry{line: line, key: k, err: fmt.Sprintf("%s needs a shell: %s (claudopilot reads this file as data, never runs it; write the value literally, in single quotes)", k, err)})
			continue
		}
		out = append(out, configEntry{line: line, key: k, val: val})
	}
	return out
}

// shellValue reads the right side of an assignment as bash would, or says
// why that needs a shell.
func shellValue(key, v, top string) (string, string) {
	// KEY="${KEY:-value}" and KEY=${KEY:-value}.
	if m := defaultRe.FindStringSubmatch(v); m != nil && m[1] == key && strings.HasPrefix(v, `"`) == strings.HasSuffix(v, `"`) {
		return m[2], ""
	}
	var b strings.Builder
	i := 0
	for i < len(v) {
		c := v[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(v[i+1:], '\'')
			if j < 0 {
				return "", "an unterminated ' (values over several lines are not read)"
			}
			b.WriteString(v[i+1 : i+1+j])
			i += j + 2
		case c == '"':
			i++
			closed := false
			for i < len(v) && !closed {
				switch d := v[i]; d {
				case '"':
					closed = true
					i++
				case '\\':
					if i+1 < len(v) && strings.IndexByte("$`\"\\", v[i+1]) >= 0 {
						b.WriteByte(v[i+1])
						i += 2
					} else {
						b.WriteByte(d)
						i++
					}
				case '$':
					n, err := repoRoot(v[i:], top, &b)
					if err != "" {
						return "", err
					}
					i += n
				case '`':
					return "", "a `command`"
				default:
					b.WriteByte(d)
					i++
				}
			}
			if !closed {
				return "", "an unterminated \" (values over several lines are not read)"
			}
		case c == '\\':
			if i+1 >= len(v) {
				return "", "a line continuation"
			}
			b.WriteByte(v[i+1])
			i += 2
		case c == '$':
			n, err := repoRoot(v[i:], top, &b)
			if err != "" {
				return "", err
			}
			i += n
		case c == '`':
			return "", "a `command`"
		case c == ' ' || c == '\t':
			rest := strings.TrimSpace(v[i:])
			if rest == "" || rest[0] == '#' {
				return b.String(), ""
			}
			return "", fmt.Sprintf("an unquoted space (bash would run %q with %s set for it)", strings.Fields(rest)[0], key)
		case strings.IndexByte(";|&<>()", c) >= 0:
			return "", fmt.Sprintf("an unquoted %q", string(c))
		case c == '~' && b.Len() == 0 && i == 0:
			return "", "a ~ (home folder) to expand"
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), ""
}

var (
	defaultRe  = regexp.MustCompile(`^"?\$\{([A-Za-z_][A-Za-z0-9_]*):?-([^}"'$\x60\\]*)\}"?$`)
	repoRootRe = regexp.MustCompile(`^\$(?:REPO_ROOT\b|\{REPO_ROOT\})`)
)

// repoRoot expands $REPO_ROOT or ${REPO_ROOT} at the start of s; any
// other $ needs a shell.
func repoRoot(s, top string, b *strings.Builder) (int, string) {
	if m := repoRootRe.FindString(s); m != "" {
		b.WriteString(top)
		return len(m), ""
	}
	switch {
	case strings.HasPrefix(s, "$(("):
		return 0, "an arithmetic expansion $((...))"
	case strings.HasPrefix(s, "$("):
		return 0, "a command substitution $(...)"
	case strings.HasPrefix(s, "${"):
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return 0, "a variable ${...}"
		}
		return 0, "a variable " + s[:end+1]
	}
	m := shellVar.FindString(s)
	if m == "" {
		m = s[:min(2, len(s))]
	}
	return 0, "a variable " + m
}

var shellVar = regexp.MustCompile(`^\$[A-Za-z_][A-Za-z0-9_]*|^\$[0-9#?@*$!-]`)

// parseJSONConfig reads Claudopilot 1.0's .claudopilot/config.json:
// camelCase keys (gateCmd) name the settings (GATE_CMD), SHOUTY keys are
// taken as they are; true/false and "1"/"0" are booleans, numbers are
// numbers.
func parseJSONConfig(b []byte) []configEntry {
	var raw map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&raw); err != nil {
		return []configEntry{{err: "not a JSON object: " + err.Error()}}
	}
	var out []configEntry
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		key := shouty(k)
		switch v := raw[k].(type) {
		case string:
			out = append(out, configEntry{key: key, val: v})
		case json.Number:
			out = append(out, configEntry{key: key, val: v.String()})
		case bool:
			val := "0"
			if v {
				val = "1"
			}
			out = append(out, configEntry{key: key, val: val})
		case nil:
			// null: as if absent
		default:
			out = append(out, configEntry{key: key, err: fmt.Sprintf("%s: want a string, a number or true/false", k)})
		}
	}
	return out
}

// shouty maps a camelCase JSON key to its SHOUTY setting name: gateCmd →
// GATE_CMD. "isolated" was Claudopilot's one irregular key.
func shouty(k string) string {
	if k == "isolated" {
		return "CLAUDOPILOT_ISOLATED"
	}
	if strings.ToUpper(k) == k {
		return k
	}
	var b strings.Builder
	for i, r := range k {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// existing lists the settings files under top that exist, relative to it.
func existing(top string) []string {
	var out []string
	for _, src := range sources {
		if _, err := os.Stat(filepath.Join(top, filepath.FromSlash(src.rel))); err == nil {
			out = append(out, src.rel)
		}
	}
	return out
}
