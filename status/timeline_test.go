package status

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/state"
)

// The timeline folds the journal: attempts by role and lane, landings,
// gates and merges marked, waits by reason (dependency until the dep
// merged, slot, lane for a launch on a lane, cooldown then slot, the
// needs-input question until its answer), and a restart cuts off what the
// killed driver had open.
func TestTimelineFold(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 22, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	recs := []state.Record{
		{Time: at(0), Event: "run"},
		{Time: at(1), Phase: "a", Event: "launch", Role: state.Worker, Attempt: 1},
		{Time: at(2), Phase: "c", Event: "launch", Role: state.Worker, Attempt: 1, Lane: "fast"},
		{Time: at(2), Phase: "a", Event: "gate", Role: state.Worker},
		{Time: at(3), Phase: "a", Event: "done", Role: state.Worker, Attempt: 1},
		{Time: at(3), Phase: "c", Event: "fail", Role: state.Worker, Attempt: 1, Reason: "rate-limit"},
		{Time: at(3), Phase: "c", Event: "cooldown", Role: state.Worker, Attempt: 1, Until: at(6)},
		{Time: at(4), Phase: "a", Event: "gate", Role: "merge"},
		{Time: at(5), Phase: "a", Event: "merged"},
		{Time: at(6), Phase: "b", Event: "launch", Role: state.Worker, Attempt: 1},
		{Time: at(7), Phase: "c", Event: "launch", Role: state.Worker, Attempt: 2, Lane: "fast"},
		{Time: at(8), Phase: "b", Event: "ask", Role: state.Worker, Attempt: 1, Detail: "which API?"},
		{Time: at(9), Phase: "b", Event: "answer", Detail: "v2"},
		{Time: at(10), Phase: "b", Event: "launch", Role: state.Worker, Attempt: 2},
		{Time: at(11), Phase: "c", Event: "done", Role: state.Worker, Attempt: 2},
		// killed here; a new driver starts
		{Time: at(12), Event: "run"},
		{Time: at(13), Phase: "b", Event: "launch", Role: state.Worker, Attempt: 3},
		{Time: at(14), Phase: "b", Event: "fail", Role: state.Worker, Attempt: 3, Reason: "gate"},
		{Time: at(14), Phase: "b", Event: "blocked", Reason: "gate"},
	}
	deps := map[string][]string{"b": {"a"}}
	tl := BuildTimeline(recs, []string{"a", "b", "c", "d"}, map[string]string{"a": "first"}, deps, map[string]bool{"d": true}, time.Time{})
	if !tl.Start.Equal(at(0)) || !tl.End.Equal(at(14)) || len(tl.Runs) != 2 {
		t.Errorf("start %v end %v runs %v", tl.Start, tl.End, tl.Runs)
	}
	got := map[string]string{}
	for _, r := range tl.Rows {
		var parts []string
		for _, s := range r.Spans {
			from, to := int(s.From.Sub(t0).Minutes()), int(s.To.Sub(t0).Minutes())
			switch s.Kind {
			case SpanWait:
				parts = append(parts, fmt.Sprintf("%s %d-%d", s.Reason, from, to))
			case SpanLanding:
				parts = append(parts, fmt.Sprintf("landing %d-%d %s", from, to, s.End))
			default:
				parts = append(parts, fmt.Sprintf("%s%d@%s %d-%d %s", s.Role, s.Attempt, s.Lane, from, to, s.End))
			}
		}
		for _, m := range r.Marks {
			parts = append(parts, fmt.Sprintf("*%s%s %d", m.Kind, m.Role, int(m.At.Sub(t0).Minutes())))
		}
		got[r.ID+" "+r.Title] = strings.Join(parts, ", ")
	}
	want := map[string]string{
		"a first": "slot 0-1, worker1@ 1-3 done, landing 3-5 merged, *gateworker 2, *gatemerge 4, *merged 5",
		"b ":      "dependency 0-5, slot 5-6, worker1@ 6-8 needs-input, needs-input 8-9, slot 9-10, worker2@ 10-11 cut off, slot 12-13, worker3@ 13-14 gate, *blocked 14",
		"c ":      "lane 0-2, worker1@fast 2-3 rate-limit, cooldown 3-6, lane 6-7, worker2@fast 7-11 done, landing 11-11 cut off, landing 12-14 ",
	}
	if len(got) != len(want) {
		t.Errorf("rows %v (d merged before the journal has none)", got)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s:\n got %s\nwant %s", k, got[k], w)
		}
	}
}
