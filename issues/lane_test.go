package issues

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An issue labelled lane:<id> runs its agent with that lane's command and
// CLAUDOPILOT_LANE; an issue without one runs the default agent; a label
// naming no lane in LANES is said in the log and the default runs.
func TestLaneLabelPicksTheLanesCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	record := filepath.Join(e.dir, "record")
	tagged := func(tag string) string {
		return e.script(tag+".sh", `echo "$CLAUDOPILOT_PHASE `+tag+` ${CLAUDOPILOT_LANE:-none}" >> "$RECORD"
`+okAgent)
	}
	pinned := e.fake.NewIssue("alice", "pinned", "x", []string{"agent-ready", "lane:Codex"}, "")
	plain := e.fake.NewIssue("alice", "plain", "x", []string{"agent-ready"}, "")
	unknown := e.fake.NewIssue("alice", "typo", "x", []string{"agent-ready", "lane:nosuch"}, "")
	log := &syncBuf{}
	q := e.queue("one", log, func(c *Config) {
		c.Agent = tagged("default")
		c.Lanes = map[string]LaneCmds{"codex": {Agent: tagged("codex"), Supervisor: tagged("codex")}}
		c.Env = append(c.Env, "RECORD="+record)
	})
	run(t, q, log)
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{
		"#" + itoa(pinned) + " codex codex",
		"#" + itoa(plain) + " default none",
		"#" + itoa(unknown) + " default none",
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("record lacks %q:\n%s", want, got)
		}
	}
	if !strings.Contains(log.String(), "label lane:nosuch names no lane in LANES") {
		t.Errorf("log:\n%s", log)
	}
}
