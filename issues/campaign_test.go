package issues

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/state"
)

// campaignAgent is okAgent that records each issue it works, and whether
// its doc carries the campaign's goal.
const campaignAgent = okAgent + `if grep -q "Make the parser fast" "$CLAUDOPILOT_PHASE_DOC"; then echo "$CLAUDOPILOT_PHASE goal" >> "$RECORD"; fi
`

// A campaign's issue is worked and merged, its agent reads the campaign's
// committed goal file, and the journal keeps its campaign. Under
// CLAUDOPILOT_SOAK=1 an older ready issue beside it shows the order: with
// one slot the issue labelled campaign:speed goes first (the default
// order, oldest first, would take the other), and the other's agent gets
// no goal. By default the campaign's issue alone: the order and the other
// node's missing goal are proven by TestPollOrder and
// scheduler.TestOutsideNodesStartInOfferedOrder.
func TestCampaignIssuesGoFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.originCommit("main", CampaignDir+"/speed.md", "Make the parser fast: every change must keep the benchmarks green.\n", "the speed campaign")
	camp, issues := 1, 1
	if soak() {
		e.fake.NewIssue("alice", "One", "first", []string{"agent-ready"}, "alice")
		camp, issues = 2, 2
	}
	e.fake.NewIssue("alice", "Fast", "the campaign's", []string{"agent-ready", "campaign:speed"}, "alice")
	id := IssueID(camp)
	record := filepath.Join(e.dir, "record")
	log := &syncBuf{}
	q := e.queue("c1", log, func(c *Config) {
		c.Agent = e.script("camp.sh", campaignAgent)
		c.Env = append(c.Env, "RECORD="+record)
	})
	jpath := filepath.Join(e.dir, "journal.jsonl")
	jn, err := state.OpenJournal(jpath)
	if err != nil {
		t.Fatal(err)
	}
	defer jn.Close()
	sum := runWith(t, q, log, harness{maxParallel: 1, journal: jn})
	if sum.Count(Merged) != issues {
		t.Fatalf("merged %d, want %d:\n%s", sum.Count(Merged), issues, log)
	}
	got, _ := os.ReadFile(record)
	if lines := strings.Fields(strings.ReplaceAll(string(got), "\n", " ")); len(lines) < 2 || lines[0] != id || lines[1] != id || strings.Count(string(got), "goal") != 1 {
		t.Errorf("worked in order:\n%s", got)
	}
	// The journal keeps each issue's campaign: the page counts its
	// progress from it (runview.Fold.Campaigns).
	hist, _ := state.History(mustRead(t, jpath))
	if h := hist[id]; h == nil || h.Campaign != "speed" || h.Last != "merged" {
		t.Errorf("%s's history %+v, want merged in campaign speed", id, h)
	}
	if h := hist["#1"]; soak() && (h == nil || h.Campaign != "") {
		t.Errorf("#1's history %+v, want no campaign", h)
	}
}
