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

	"github.com/claudopilot/claudopilot/protect"
	"github.com/claudopilot/claudopilot/roadmap"
)

// ConfigFile is claudopilot's own settings file at the repository root.
const ConfigFile = "claudopilot.config"

// IssuePilotConf is issue-pilot's settings file: read at the repository
// root, or where issue-pilot itself would read it (ISSUE_PILOT_CONF, else
// $ISSUE_PILOT_HOME/issue-pilot.conf).
const IssuePilotConf = "issue-pilot.conf"

// sources are the settings files read at the repository root, highest
// precedence first: claudopilot's own file, then Claudopilot's (1.0's
// JSON, then the shell files of earlier versions), then issue-pilot's, so
// a migrating repository keeps its gate and agent without a change.
var sources = []struct {
	rel    string
	format string // "kv": claudopilot.config; "sh": a Claudopilot shell file; "json"; "ip": issue-pilot's shell file
}{
	{ConfigFile, "kv"},
	{".claudopilot/config.json", "json"},
	{".claudopilot/config.sh", "sh"},
	{"claudopilot.config.sh", "sh"},
	{IssuePilotConf, "ip"},
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
// repository root top (Files: a source added there is protected with it;
// and issue-pilot's file where the environment names it, when that is in
// the repository) and PROTECTED_PATHS' globs; Off for PROTECTED_PATHS=none.
// The engine adds what the other readers declare.
func (s *Settings) Protected(top string) protect.Set {
	rules := slices.Clone(s.ProtectedPaths.Rules)
	files := append(Files(top), s.named...)
	for _, f := range files {
		rules = append(rules, protect.File(top, f, "a settings file, read by the settings model")...)
	}
	return protect.Set{Off: s.ProtectedPaths.Off, Rules: rules}
}

// claudopilotOnly are Claudopilot's settings that mean nothing here. They
// are accepted in its files so they run unchanged, with a note saying what
// to do instead; each value is that note.
var claudopilotOnly = map[string]string{
	"CLAUDOPILOT_ISOLATED":   "agents run in worktrees of this repository; there is no container mode (SANDBOX=bwrap confines them)",
	"WORKER_IMAGE":           "agents run in worktrees of this repository; there is no container mode",
	"USAGE_WINDOW_SECONDS":   "rate limits are read from the agent's output instead",
	"MAX_TICKS_PER_WINDOW":   "rate limits are read from the agent's output instead",
	"USAGE_THRESHOLD_PCT":    "rate limits are read from the agent's output instead",
	"RETRY_TRANSIENT_API":    "set TRANSIENT_API_MAX_RETRIES=0 to turn retries off",
	"LOG_FILE":               "logs are under .claudopilot/logs/<id>/",
	"RENDER_STREAM":          "claude's stream-json is rendered by claudopilot itself",
	"RENDER_STREAM_OPENCODE": "opencode's output is logged as it comes",
	"BASE_BRANCH_EXPLICIT":   "naming the branch is enough: set BASE_BRANCH (or pass --base)",
	"RUNNER_FORCE_BOOTSTRAP": "BOOTSTRAP_CMD runs at every start",
	"CLAUDOPILOT_IMAGE_TAG":  "there is no container mode",
	"CLAUDOPILOT_WEB":        "the web page is off unless LISTEN is set (docs/web.md)",
	"CLAUDOPILOT_WEB_PORT":   "set LISTEN=127.0.0.1:PORT (docs/web.md)",
	"CLAUDOPILOT_WEB_HOST":   "set LISTEN=HOST:PORT (docs/web.md)",
	"REPO_ROOT":              "the repository is the one claudopilot runs in; $REPO_ROOT in a value is its top level",
}

// Note is a setting that was read under another tool's name or form
// (ReadAs: what it was read as), that has no effect here (Hint: what to
// do instead), or that this driver retired (Retired, Hint: what replaced
// it).
type Note struct {
	Where, Key string
	Tool       string // whose setting it is: Claudopilot, issue-pilot, issue-orchestrator
	Hint       string
	ReadAs     string
	Retired    bool // a setting of this driver's that is gone
}

func (n Note) String() string {
	if n.Retired {
		return fmt.Sprintf("%s: %s is retired and has no effect: %s", n.Where, n.Key, n.Hint)
	}
	tool := n.Tool
	if tool == "" {
		tool = "Claudopilot"
	}
	if n.ReadAs != "" {
		return fmt.Sprintf("%s: %s (%s's) is read as %s", n.Where, n.Key, tool, n.ReadAs)
	}
	return fmt.Sprintf("%s: %s is %s's and has no effect here: %s", n.Where, n.Key, tool, n.Hint)
}

// OrchestratorConfig is where issue-orchestrator (issue-orchestrator/
// issue-orchestrator) keeps a repository's settings: YAML files, one per
// mode, under .issue-orchestrator/config/.
const OrchestratorConfig = ".issue-orchestrator/config"

// orchestratorNotes says that issue-orchestrator's YAML settings are not
// read, when the repository has them: its model (agent labels with their
// own prompts, reviewer and tech-lead agents, pull requests per issue)
// has no one-to-one mapping to knobs, so nothing in them may look taken.
func orchestratorNotes(top string) []Note {
	fi, err := os.Stat(filepath.Join(top, filepath.FromSlash(OrchestratorConfig)))
	if err != nil || !fi.IsDir() {
		return nil
	}
	return []Note{{Where: OrchestratorConfig + "/", Key: "this settings folder", Tool: "issue-orchestrator",
		Hint: "its YAML is not read; docs/migrating.md#issue-orchestrator gives each section's equivalent (its claims, io:claimed, are left alone: FOREIGN_CLAIM_LABELS)"}}
}

// retired are settings this driver had once: accepted in the files and
// the environment, with a note that says what replaced them.
var retired = map[string]string{
	"MERGE_BATCH_GATE": "every first-parent commit on the base is gated now, merge trains included; GATE_SLOTS sets how many merge gates run at once (docs/landing.md)",
}

// retiredNotes notes the retired settings the environment sets.
func retiredNotes(env map[string]string) []Note {
	var notes []Note
	for k, hint := range retired {
		if _, ok := env[k]; ok {
			notes = append(notes, Note{Where: "the environment", Key: k, Hint: hint, Retired: true})
		}
	}
	return notes
}

// fileValue is a value a settings file sets, and where.
type fileValue struct {
	v   string
	src Source
	// as is the name the line wrote when it is another tool's name for
	// the knob (POLL_SECS for POLL_SECONDS): the value is already the
	// knob's.
	as string
}

// fileSource is one settings file to read: its path, its name in
// messages, and its format.
type fileSource struct{ path, name, format string }

// fileSources are the settings files to read, highest precedence first.
// Where the environment names a tool's file, as the tool itself read it,
// that file is read instead of the repository's: issue-pilot's
// ISSUE_PILOT_CONF (else $ISSUE_PILOT_HOME/issue-pilot.conf), and
// Claudopilot's CLAUDOPILOT_CONFIG (a .json file as config.json, any
// other as its shell file). A file the environment names must exist.
func fileSources(top string, env map[string]string) ([]fileSource, []Problem) {
	var out []fileSource
	var probs []Problem
	done := map[string]bool{}
	for _, src := range sources {
		fs := fileSource{filepath.Join(top, filepath.FromSlash(src.rel)), src.rel, src.format}
		if p, from := envNamed(top, env, src.format); p != "" {
			if done[from] {
				continue // CLAUDOPILOT_CONFIG takes the place of Claudopilot's files, once
			}
			done[from] = true
			if _, err := os.Stat(p); err != nil {
				probs = append(probs, Problem{Src: Source{Kind: FromEnv, Name: from}, Msg: fmt.Sprintf("%s names %s, which cannot be read: %v", from, p, err), Unreadable: true})
				continue
			}
			fs.path, fs.name = p, displayPath(top, p)
			if from == "CLAUDOPILOT_CONFIG" {
				fs.format = "sh"
				if strings.HasSuffix(p, ".json") {
					fs.format = "json"
				}
			}
		}
		out = append(out, fs)
	}
	return out, probs
}

// envNamed is the settings file of a format the environment names, and
// the variable that names it; "" when none does. A relative path is taken
// from the repository's top.
func envNamed(top string, env map[string]string, format string) (string, string) {
	abs := func(p string) string {
		if !filepath.IsAbs(p) {
			p = filepath.Join(top, p)
		}
		return filepath.Clean(p)
	}
	switch format {
	case "ip":
		if p := env["ISSUE_PILOT_CONF"]; p != "" {
			return abs(p), "ISSUE_PILOT_CONF"
		}
		if h := env["ISSUE_PILOT_HOME"]; h != "" {
			return abs(filepath.Join(h, IssuePilotConf)), "ISSUE_PILOT_HOME"
		}
	case "sh", "json":
		if p := env["CLAUDOPILOT_CONFIG"]; p != "" {
			return abs(p), "CLAUDOPILOT_CONFIG"
		}
	}
	return "", ""
}

// ClaudopilotFile names the first of Claudopilot's settings files (v0.x's
// shell file, 1.0's config.json or config.sh, or CLAUDOPILOT_CONFIG's)
// that exists: "" when the repository is not set up for Claudopilot.
func ClaudopilotFile(top string, env map[string]string) string {
	srcs, _ := fileSources(top, env)
	for _, src := range srcs {
		if src.format != "sh" && src.format != "json" {
			continue
		}
		if fi, err := os.Stat(src.path); err == nil && fi.Mode().IsRegular() {
			return src.name
		}
	}
	return ""
}

// displayPath names a file relative to the top when it is inside it.
func displayPath(top, p string) string {
	if r, err := filepath.Rel(top, p); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return p
}

// readFiles reads every settings file at the repository root top (and
// issue-pilot's where env names it). For each key the first file (in
// sources order) that sets it wins; in a file the last line that sets it
// wins, as when bash sources the file. The values of the good lines are
// returned with the notes and the problems of the others. LANE_<id>_<KEY>
// lines are kept as written: derive checks them against LANES.
func readFiles(top string, env map[string]string) (map[string]fileValue, []Note, []Problem, []string) {
	known := map[string]string{} // name or alias → knob name
	for _, k := range Knobs() {
		known[k.Env] = k.Env
		if al := Aliases[k.Env]; al != "" {
			known[al] = k.Env
		}
	}
	out := map[string]fileValue{}
	var notes []Note
	srcs, bad := fileSources(top, env)
	var read []string
	for _, src := range srcs {
		b, err := os.ReadFile(src.path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			bad = append(bad, Problem{Src: Source{Kind: FromFile, Name: src.name}, Msg: err.Error(), Unreadable: true})
			continue
		}
		read = append(read, src.name)
		var ents []configEntry
		switch src.format {
		case "json":
			ents = parseJSONConfig(b)
		case "sh", "ip":
			ents = parseShellConfig(b, top, env["HOME"])
		default:
			ents = parseKVConfig(b)
		}
		mine := map[string]fileValue{} // this file's: its last line wins
		for _, e := range ents {
			where := Source{Kind: FromFile, Name: src.name, Line: e.line}
			if e.err != "" {
				bad = append(bad, Problem{Src: where, Msg: e.err, Unreadable: true})
				continue
			}
			fv, note, prob := classify(e, where, src.format, known)
			if note != nil {
				notes = append(notes, *note)
			}
			if prob != nil {
				bad = append(bad, *prob)
			}
			if fv != nil {
				mine[fv.name] = fv.fileValue
			}
		}
		for name, fv := range mine {
			if _, seen := out[name]; !seen {
				out[name] = fv
			}
		}
	}
	return out, notes, bad, read
}

type namedValue struct {
	name string
	fileValue
}

// classify says what one line of a settings file is: a knob's value
// (under its name, another tool's name for it, or a lane's key), a note
// (another tool's setting that means nothing here), or a problem (a
// setting no tool had, with the closest known name).
func classify(e configEntry, where Source, format string, known map[string]string) (*namedValue, *Note, *Problem) {
	if name, ok := known[e.key]; ok {
		return &namedValue{name, fileValue{v: e.val, src: where}}, nil, nil
	}
	if r, ok := renameOf(e.key); ok {
		v, msg := r.conv(e.val)
		if msg != "" {
			return nil, nil, &Problem{Key: e.key, Val: e.val, Src: where, Msg: msg}
		}
		return &namedValue{r.New, fileValue{v: v, src: where, as: e.key}}, nil, nil
	}
	if strings.HasPrefix(e.key, "LANE_") {
		if format == "ip" && strings.HasSuffix(e.key, "_EFFORT") {
			return nil, &Note{Where: where.String(), Key: e.key, Tool: "issue-pilot", Hint: "issue-pilot showed it on its status page; put the effort in the lane's CMD"}, nil
		}
		return &namedValue{e.key, fileValue{v: e.val, src: where}}, nil, nil
	}
	if format == "sh" || format == "json" {
		if hint := claudopilotOnly[e.key]; hint != "" {
			return nil, &Note{Where: where.String(), Key: e.key, Hint: hint}, nil
		}
	}
	if format == "ip" {
		if hint := issuePilotOnly(e.key); hint != "" {
			return nil, &Note{Where: where.String(), Key: e.key, Tool: "issue-pilot", Hint: hint}, nil
		}
	}
	if hint := retired[e.key]; hint != "" {
		return nil, &Note{Where: where.String(), Key: e.key, Hint: hint, Retired: true}, nil
	}
	return nil, nil, &Problem{Src: where, Msg: "unknown setting " + e.key + suggestKey(e.key, known), Unreadable: true}
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

// parseShellConfig reads a Claudopilot claudopilot.config.sh (or an
// issue-pilot.conf) as data: the assignments bash would make (KEY=VALUE or
// export KEY=VALUE, with bash's quoting; several on one line, separated by
// blanks or ;), never running it. A line whose meaning needs a shell (a
// command, $(...), backticks, a variable, |, &&, a redirection) is an
// error. Some forms are read as data because their meaning is fixed:
// $REPO_ROOT, which Claudopilot set to the repository root before
// sourcing the file, $HOME, and KEY="${KEY:-value}", which means value
// under a precedence where the environment already wins over the file.
func parseShellConfig(b []byte, top, home string) []configEntry {
	var out []configEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		out = append(out, shellLine(strings.TrimSpace(sc.Text()), line, top, home)...)
	}
	return out
}

// shellLine reads one line of assignments.
func shellLine(t string, line int, top, home string) []configEntry {
	var out []configEntry
	for t != "" && !strings.HasPrefix(t, "#") {
		if rest, ok := strings.CutPrefix(t, "export"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			t = strings.TrimSpace(rest)
			word := t[:strings.IndexAny(t+" ", " \t;")]
			if shellName.MatchString(word) {
				// `export NAME`: exports what an earlier line set.
				t = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(t[len(word):]), ";"))
				continue
			}
		}
		k, v, ok := strings.Cut(t, "=")
		if !ok || !shellName.MatchString(k) {
			// A line is taken whole or not at all.
			if len(out) > 0 {
				return []configEntry{{line: line, err: fmt.Sprintf("after %s=…, bash would run %q: this line needs a shell (claudopilot reads this file as data, never runs it)", out[len(out)-1].key, strings.Fields(t)[0])}}
			}
			return []configEntry{{line: line, err: "not a KEY=VALUE assignment: this line needs a shell to mean anything (claudopilot reads this file as data, never runs it)"}}
		}
		val, rest, err := shellValue(k, v, top, home)
		if err != "" {
			return []configEntry{{line: line, key: k, err: fmt.Sprintf("%s needs a shell: %s (claudopilot reads this file as data, never runs it; write the value literally, in single quotes)", k, err)}}
		}
		out = append(out, configEntry{line: line, key: k, val: val})
		t = rest
	}
	return out
}

// shellValue reads the right side of an assignment as bash would, or says
// why that needs a shell; rest is what follows it on the line (the next
// assignment), after the blanks or the ; between them.
func shellValue(key, v, top, home string) (val, rest, why string) {
	// KEY="${KEY:-value}" and KEY=${KEY:-value}.
	if m := defaultRe.FindStringSubmatch(v); m != nil && m[1] == key && strings.HasPrefix(v, `"`) == strings.HasSuffix(m[0], `"`) {
		r := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v[len(m[0]):]), ";"))
		if r == "" || r[0] == '#' {
			return m[2], "", ""
		}
		if next := nextAssignment(r); next != "" {
			return m[2], next, ""
		}
	}
	var b strings.Builder
	i := 0
	for i < len(v) {
		c := v[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(v[i+1:], '\'')
			if j < 0 {
				return "", "", "an unterminated ' (values over several lines are not read)"
			}
			b.WriteString(v[i+1 : i+1+j])
			i += j + 2
		case c == '"':
			n, err := doubleQuoted(v[i:], top, home, &b)
			if err != "" {
				return "", "", err
			}
			i += n
		case c == '\\':
			if i+1 >= len(v) {
				return "", "", "a line continuation"
			}
			b.WriteByte(v[i+1])
			i += 2
		case c == '$':
			n, err := fixedVar(v[i:], top, home, &b)
			if err != "" {
				return "", "", err
			}
			i += n
		case c == '`':
			return "", "", "a `command`"
		case c == ' ' || c == '\t' || c == ';':
			r := strings.TrimSpace(v[i:])
			if r[0] == ';' {
				r = strings.TrimSpace(r[1:])
			} else if r != "" && r[0] != '#' && nextAssignment(r) == "" {
				return "", "", fmt.Sprintf("an unquoted space (bash would run %q with %s set for it)", strings.Fields(r)[0], key)
			}
			if r == "" || r[0] == '#' {
				return b.String(), "", ""
			}
			return b.String(), r, "" // the next assignment, or a command the caller names
		case strings.IndexByte("|&<>()", c) >= 0:
			return "", "", fmt.Sprintf("an unquoted %q", string(c))
		case c == '~' && b.Len() == 0 && i == 0:
			return "", "", "a ~ (home folder) to expand"
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), "", ""
}

// nextAssignment is r when it starts with another assignment (NAME= or
// export); otherwise "".
func nextAssignment(r string) string {
	if strings.HasPrefix(r, "export ") {
		return r
	}
	if k, _, ok := strings.Cut(r, "="); ok && shellName.MatchString(k) {
		return r
	}
	return ""
}

// doubleQuoted reads a "..." word at the start of s (with \", \\, \$, \`
// escapes and the fixed variables); n is its length.
func doubleQuoted(s, top, home string, b *strings.Builder) (int, string) {
	i := 1
	for i < len(s) {
		switch d := s[i]; d {
		case '"':
			return i + 1, ""
		case '\\':
			if i+1 < len(s) && strings.IndexByte("$`\"\\", s[i+1]) >= 0 {
				b.WriteByte(s[i+1])
				i += 2
			} else {
				b.WriteByte(d)
				i++
			}
		case '$':
			n, err := fixedVar(s[i:], top, home, b)
			if err != "" {
				return 0, err
			}
			i += n
		case '`':
			return 0, "a `command`"
		default:
			b.WriteByte(d)
			i++
		}
	}
	return 0, "an unterminated \" (values over several lines are not read)"
}

var (
	defaultRe  = regexp.MustCompile(`^"?\$\{([A-Za-z_][A-Za-z0-9_]*):?-([^}"'$\x60\\]*)\}"?`)
	repoRootRe = regexp.MustCompile(`^\$(?:REPO_ROOT\b|\{REPO_ROOT\})`)
	homeRe     = regexp.MustCompile(`^\$(?:HOME\b|\{HOME\})`)
)

// fixedVar expands $REPO_ROOT or ${REPO_ROOT} (the repository's top) and
// $HOME or ${HOME} (the user's home) at the start of s; any other $
// needs a shell.
func fixedVar(s, top, home string, b *strings.Builder) (int, string) {
	if m := repoRootRe.FindString(s); m != "" {
		b.WriteString(top)
		return len(m), ""
	}
	if m := homeRe.FindString(s); m != "" && home != "" {
		b.WriteString(home)
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

// namedFiles are the settings files the environment names.
func namedFiles(top string, env map[string]string) []string {
	var out []string
	for _, src := range sources {
		if p, _ := envNamed(top, env, src.format); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
