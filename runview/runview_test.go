package runview

import (
	"slices"
	"testing"

	"github.com/claudopilot/claudopilot/scheduler"
)

// Each campaign's progress is counted from the nodes: merged is done, a
// node under way (agent, gate, merge, question) is running, an offered or
// parked one is left; an away node, or one whose campaign label went, is
// not counted; nodes seeded from the journal count as the events' do.
func TestCampaigns(t *testing.T) {
	f := New()
	f.Add(Node{ID: "#1", State: "merged", Outside: true, Campaign: "speed"}) // an earlier run's
	ev := func(kind, id, st, campaign string) {
		f.Apply(scheduler.Event{Kind: kind, Phase: id, State: st, Title: id, Campaign: campaign})
	}
	for _, id := range []string{"#2", "#3", "#4", "#5", "#6"} {
		ev(scheduler.EvNode, id, "", "speed")
	}
	ev(scheduler.EvNode, "#7", "", "docs")
	ev(scheduler.EvNode, "#8", "", "")
	ev(scheduler.EvLaunch, "#2", "running", "")
	ev(scheduler.EvLaunch, "#3", "running", "")
	ev(scheduler.EvMerged, "#3", "merged", "")
	ev(scheduler.EvFailed, "#4", "failed", "")
	ev(scheduler.EvAway, "#5", "away", "")
	ev(scheduler.EvNode, "#6", "", "") // its label taken off
	ev(scheduler.EvLaunch, "#7", "running", "")
	ev(scheduler.EvAsk, "#7", "", "")
	got := f.Campaigns()
	want := []Campaign{{Name: "docs", Running: 1}, {Name: "speed", Done: 2, Running: 1, Left: 1}}
	if !slices.Equal(got, want) {
		t.Errorf("campaigns %+v, want %+v", got, want)
	}
}
