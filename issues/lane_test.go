package issues

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/scheduler"
)

// An issue labelled lane:<id> is pinned to that lane of the scheduler (its
// command, CLAUDOPILOT_LANE); an issue without one takes the first lane
// with a free slot; a label naming no lane in LANES is said in the log and
// any lane runs the issue (its node has no lane, as one without a label).
// The pinned issue is worked by default, and the plain one beside it
// under CLAUDOPILOT_SOAK=1: which free lane an unpinned node takes is the
// scheduler's rule (scheduler TestLanesSplitByAnnotationAndFreeSlot), and
// that a plain issue's node has no lane is read here without a run, as
// the unknown label is.
func TestLaneLabelPinsTheIssue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	record := filepath.Join(e.dir, "record")
	tagged := func(tag string) string {
		return e.script(tag+".sh", `echo "$CLAUDOPILOT_PHASE `+tag+` ${CLAUDOPILOT_LANE:-none}" >> "$RECORD"
`+okAgent)
	}
	pinned := e.fake.NewIssue("alice", "pinned", "x", []string{"agent-ready", "lane:Codex"}, "")
	plainLabels, merges := []string(nil), 1 // not queued: read, not worked
	if soak() {
		plainLabels, merges = []string{"agent-ready"}, 2
	}
	plain := e.fake.NewIssue("alice", "plain", "x", plainLabels, "")
	unknown := e.fake.NewIssue("alice", "typo", "x", []string{"lane:nosuch"}, "") // not queued: read, not worked
	log := &syncBuf{}
	claude, codex := tagged("claude"), tagged("codex")
	q := e.queue("one", log, func(c *Config) {
		c.Agent = tagged("default")
		c.Lanes = map[string]LaneCmds{"claude": {Agent: claude}, "codex": {Agent: codex}}
		c.Env = append(c.Env, "RECORD="+record)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a bound, not a wait
	defer cancel()
	for n, lane := range map[int]string{pinned: "codex", plain: "", unknown: ""} {
		is, err := q.gh.Issue(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if nd := q.node(is, nil); nd.Lane != lane {
			t.Errorf("#%d's node is on lane %q, want %q", n, nd.Lane, lane)
		}
	}
	if !strings.Contains(log.String(), "label lane:nosuch names no lane in LANES") {
		t.Errorf("log:\n%s", log)
	}
	lanes := []scheduler.Lane{{ID: "claude", Cmd: claude, SupervisorCmd: claude, Slots: 1}, {ID: "codex", Cmd: codex, SupervisorCmd: codex, Slots: 1}}
	sum, err := runQueue(ctx, q, harness{lanes: lanes})
	if err != nil || sum.Count(Merged) != merges {
		t.Fatalf("Run: %v, summary %+v\nlog:\n%s", err, sum, log)
	}
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	// The pinned issue comes first and takes codex; plain, the first
	// free lane, claude.
	want := []string{"#" + itoa(pinned) + " codex codex"}
	if soak() {
		want = append(want, "#"+itoa(plain)+" claude claude")
	}
	for _, want := range want {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("record lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, " default ") {
		t.Errorf("AGENT_CMD ran beside LANES:\n%s", got)
	}
}
