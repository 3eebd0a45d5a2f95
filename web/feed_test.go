package web

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

// campaign tells m of issues #from… of campaign name, as the scheduler
// does: done of them merged, running launched, left only offered.
func campaign(m *Model, from int, name string, done, running, left int) {
	for i := range done + running + left {
		id := fmt.Sprintf("#%d", from+i)
		m.Apply(scheduler.Event{Kind: scheduler.EvNode, Phase: id, Title: "issue " + id, Campaign: name})
		switch {
		case i < done:
			m.Apply(scheduler.Event{Kind: scheduler.EvLaunch, Phase: id, State: "running", Role: "worker", Attempt: 1})
			m.Apply(scheduler.Event{Kind: scheduler.EvMerged, Phase: id, State: "merged"})
		case i < done+running:
			m.Apply(scheduler.Event{Kind: scheduler.EvLaunch, Phase: id, State: "running", Role: "worker", Attempt: 1})
		}
	}
}

// The page's state carries the queue's feed from the one model: each
// scanner with its last run and what it filed, whether one runs now, and
// each promote step's newest outcome, a red one with why, each campaign's
// progress from the run's nodes (the one fold). A maintainer's
// "run now" and "switch off" are the page's authenticated POST actions,
// refused from another origin.
func TestFeedOnThePage(t *testing.T) {
	f := newFixture(t)
	at := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	f.srv.Model.SetFeed(func() Feed {
		return Feed{
			Scanners: []Scanner{
				{Name: "bugs", From: "built in", LastRun: at, Filed: 1, Dropped: 2, Issues: []Filed{{Number: 7, Title: "Parser drops a line"}}},
				{Name: "docs-drift", From: "claudopilot/scanners/docs-drift.md", Off: true, Running: true},
			},
			Promote: []PromoteStep{{From: "main", To: "staging", Kind: "red", At: at, PR: 4, Why: "checks red: ci"}},
		}
	})
	campaign(f.srv.Model, 10, "speed", 2, 1, 1)
	campaign(f.srv.Model, 20, "docs", 0, 0, 1)
	// Away: out of the driver's hands, out of the count; a campaign
	// label taken off: out of it too.
	f.srv.Model.Apply(scheduler.Event{Kind: scheduler.EvAway, Phase: "#13", State: "away", Detail: "closed"})
	f.srv.Model.Apply(scheduler.Event{Kind: scheduler.EvNode, Phase: "#20", Title: "issue #20"})
	campaign(f.srv.Model, 30, "", 1, 1, 1)
	var st State
	resp := f.do(t, "GET", "/api/v1/state", "tok", "", "")
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if len(st.Scanners) != 2 || st.Scanners[0].Issues[0].Number != 7 || !st.Scanners[0].LastRun.Equal(at) || !st.Scanners[1].Off || !st.Scanners[1].Running {
		t.Errorf("scanners %+v", st.Scanners)
	}
	if len(st.Promote) != 1 || st.Promote[0].Kind != "red" || st.Promote[0].Why != "checks red: ci" {
		t.Errorf("promote %+v", st.Promote)
	}
	if want := []Campaign{{Name: "speed", Done: 2, Running: 1}}; !slices.Equal(st.Campaigns, want) {
		t.Errorf("campaigns %+v, want %+v", st.Campaigns, want)
	}
	self := f.ts.URL
	for body, want := range map[string]int{
		`{"action":"scanner_run","id":"bugs"}`: 200,
		`{"action":"scanner_off","id":"bugs"}`: 200,
		`{"action":"scanner_on","id":"bugs"}`:  200,
		`{"action":"scanner_run"}`:             400,
		`{"action":"scanner_off","id":"nope"}`: 409,
		`{"action":"scanner_run","id":"nope"}`: 409,
	} {
		if got := f.do(t, "POST", "/api/v1/actions", "tok", self, body).StatusCode; got != want {
			t.Errorf("%s: %d, want %d", body, got, want)
		}
	}
	if got := f.do(t, "POST", "/api/v1/actions", "tok", "http://evil.example", `{"action":"scanner_run","id":"bugs"}`).StatusCode; got != 403 {
		t.Errorf("a cross-origin run now: %d, want 403", got)
	}
	if got := f.do(t, "POST", "/api/v1/actions", "", self, `{"action":"scanner_off","id":"bugs"}`).StatusCode; got != 401 {
		t.Errorf("a switch off without the token: %d, want 401", got)
	}
	if want := []string{"scanner run bugs", "scanner bugs on=false", "scanner bugs on=true"}; !slices.Equal(sortedCopy(f.acts.done), sortedCopy(want)) {
		t.Errorf("actions %v, want %v", f.acts.done, want)
	}
}

// A restarted driver's page counts the campaign's issues an earlier run
// merged: the journal's "node" record keeps the campaign.
func TestCampaignFromTheJournal(t *testing.T) {
	rm, err := roadmap.Parse("/rm", []byte(testManifest), []string{"a.md", "b.md", "c.md"}, roadmap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hist, _ := state.History([]state.Record{
		{Phase: "#5", Event: "node", Title: "Fast parser", Campaign: "speed"},
		{Phase: "#5", Event: "launch", Role: state.Worker, Attempt: 1},
		{Phase: "#5", Event: "merged"},
		{Phase: "#6", Event: "node", Title: "Other"},
		{Phase: "#6", Event: "merged"},
	})
	m := NewModel(rm, hist, state.Rules{}, false)
	m.Apply(scheduler.Event{Kind: scheduler.EvNode, Phase: "#7", Title: "Faster", Campaign: "speed"})
	if got, want := m.State().Campaigns, []Campaign{{Name: "speed", Done: 1, Left: 1}}; !slices.Equal(got, want) {
		t.Errorf("campaigns %+v, want %+v", got, want)
	}
}

func sortedCopy(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
