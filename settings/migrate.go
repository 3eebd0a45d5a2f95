package settings

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Migration is what `claudopilot migrate` makes of another tool's settings
// files (Claudopilot's .claudopilot/config.json, .claudopilot/config.sh,
// claudopilot.config.sh or CLAUDOPILOT_CONFIG; issue-pilot.conf): the
// claudopilot.config that says the same, and a report of each setting.
type Migration struct {
	Read    []string // the files read, in precedence order
	Config  string   // claudopilot.config's text
	Took    []string // settings taken under their own name
	Renamed []string // settings read under another tool's name or form
	Dropped []string // settings, lines and files with no effect here, and why
}

// ErrNothingToMigrate: no other tool's settings file was found.
var ErrNothingToMigrate = errors.New("no Claudopilot or issue-pilot settings file here (.claudopilot/config.json, .claudopilot/config.sh, claudopilot.config.sh, issue-pilot.conf, or CLAUDOPILOT_CONFIG / ISSUE_PILOT_CONF)")

// Migrate reads the other tools' settings files of the repository at top
// (and those env names, as the tools themselves read them) through the
// same readers as every run, so a setting is migrated exactly as it is
// read. The old files are never changed. It fails when claudopilot.config
// exists already: that file is the migration's result.
func Migrate(top string, env map[string]string) (*Migration, error) {
	own := filepath.Join(top, ConfigFile)
	if _, err := os.Stat(own); err == nil {
		return nil, fmt.Errorf("%s exists already; migrate writes it (move it away to migrate again)", ConfigFile)
	}
	files, notes, probs, read := readFiles(top, env)
	if len(read) == 0 {
		return nil, ErrNothingToMigrate
	}
	m := &Migration{Read: read}
	for _, n := range append(notes, orchestratorNotes(top)...) {
		m.Dropped = append(m.Dropped, n.String())
	}
	for _, p := range probs {
		m.Dropped = append(m.Dropped, p.String())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# claudopilot.config, written by `claudopilot migrate` from %s.\n# The old files are kept; this file's settings come first (docs/config.md).\n", strings.Join(read, ", "))
	for _, name := range migrateOrder(files) {
		fv := files[name]
		if k, ok := knob(name); ok {
			if _, msg := parse(k, fv.v); msg != "" {
				m.Dropped = append(m.Dropped, fmt.Sprintf("%s: %s=%s: %s", fv.src, name, fv.v, msg))
				continue
			}
		}
		from := fv.src.String()
		if fv.as != "" {
			m.Renamed = append(m.Renamed, fmt.Sprintf("%s: %s is written as %s=%s", from, fv.as, name, fv.v))
			from += " (" + fv.as + ")"
		} else {
			m.Took = append(m.Took, fmt.Sprintf("%s: %s=%s", from, name, fv.v))
		}
		fmt.Fprintf(&b, "\n# from %s\n%s=%s\n", from, name, kvValue(fv.v))
	}
	if f := ClaudopilotFile(top, env); f != "" {
		if _, set := files["PUSH_BASE"]; !set {
			m.Took = append(m.Took, "PUSH_BASE=1: Claudopilot ("+f+") pushed the base to origin after every merge (docs/landing.md#pushing-the-base)")
			fmt.Fprintf(&b, "\n# Claudopilot (%s) pushed the base after every merge (git pull --ff-only before, git push origin <base> after)\nPUSH_BASE=1\n", f)
		}
	}
	if _, err := os.Stat(filepath.Join(top, "claudopilot", "prompts")); err == nil {
		m.Took = append(m.Took, "claudopilot/prompts/: Claudopilot v0.x's prompt overrides are read where they are (docs/config.md)")
	}
	m.Config = b.String()
	return m, nil
}

// migrateOrder is the settings in the order of the knob table, lanes'
// settings last, sorted.
func migrateOrder(files map[string]fileValue) []string {
	var out, lanes []string
	for _, k := range Knobs() {
		if _, ok := files[k.Env]; ok {
			out = append(out, k.Env)
		}
	}
	for name := range files {
		if !slices.Contains(out, name) {
			lanes = append(lanes, name)
		}
	}
	slices.Sort(lanes)
	return append(out, lanes...)
}

func knob(name string) (Knob, bool) {
	for _, k := range Knobs() {
		if k.Env == name {
			return k, true
		}
	}
	return Knob{}, false
}

// kvValue writes v so that claudopilot.config's reader (parseKVConfig)
// reads it back as v: it drops one pair of surrounding quotes and the
// blanks around a value, so a value that has them is quoted once more.
func kvValue(v string) string {
	quoted := len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'')
	if quoted || strings.TrimSpace(v) != v {
		if strings.HasPrefix(v, "'") {
			return `"` + v + `"`
		}
		return "'" + v + "'"
	}
	return v
}
