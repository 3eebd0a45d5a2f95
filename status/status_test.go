package status_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/ledger"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/promote/record"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/status"
)

const src = `# Execution Manifest: t

## Phases

1. [merged] **p1** — first (deps: none)
2. [pending] **p2** — after issue 3 (deps: p1, #3)
3. [pending] **p3** — after issue 12 (deps: #12)
4. [running] **p5** — holds its scope (owns: api/) (deps: none)
5. [pending] **p6** — same scope (owns: api/) (deps: none)

<!-- LOOP-CHECKPOINT: look -->

6. [pending] **p4** — below the checkpoint (deps: none)
`

// journal writes recs through the driver's own journal writer.
func journal(t *testing.T, l state.Layout, recs ...state.Record) {
	t.Helper()
	j, err := state.OpenJournal(l.JournalPath())
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, r := range recs {
		r.Time = t0.Add(time.Duration(i) * time.Second)
		if err := j.Append(r); err != nil {
			t.Fatal(err)
		}
	}
}

func snapshot(t *testing.T, recs ...state.Record) *status.Snapshot {
	t.Helper()
	rm, err := roadmap.Parse("/rm", []byte(src), nil, roadmap.Options{External: roadmap.IsIssueRef})
	if err != nil {
		t.Fatal(err)
	}
	l := state.Layout{Top: t.TempDir()}
	journal(t, l, recs...)
	s, err := status.Read(rm, l, "", time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func cost(v float64) *ledger.Usage { return &ledger.Usage{CostUSD: &v} }

// Outside nodes ("#N") are folded from their journal records: state from
// the last record, attempts, reason, cost; listed by number, after the
// manifest's phases, never counted with them.
func TestOutsideNodesFromTheJournal(t *testing.T) {
	s := snapshot(t,
		state.Record{Phase: "#12", Event: "launch", Role: state.Worker, Attempt: 1},
		state.Record{Phase: "#12", Event: "usage", Role: state.Worker, Attempt: 1, Usage: cost(0.25)},
		state.Record{Phase: "#12", Event: "fail", Role: state.Worker, Attempt: 1, Reason: state.ReasonChecks, Detail: "ci/test failed"},
		state.Record{Phase: "#12", Event: "blocked", Reason: state.ReasonChecks},
		state.Record{Phase: "#3", Event: "launch", Role: state.Worker, Attempt: 1},
		state.Record{Phase: "#3", Event: "done", Role: state.Worker, Attempt: 1},
		state.Record{Phase: "#3", Event: "merged", Commit: "abc"},
		state.Record{Phase: "#6", Event: "launch", Role: state.Worker, Attempt: 1},
		state.Record{Phase: "#6", Event: "done", Role: state.Worker, Attempt: 1},
		state.Record{Phase: "#6", Event: "away", Detail: "handed to a human"},
		state.Record{Phase: "#7", Event: "launch", Role: state.Worker, Attempt: 1},
		state.Record{Phase: "#8", Event: "launch", Role: state.Worker, Attempt: 1},
		state.Record{Phase: "#8", Event: "failed", Reason: state.ReasonExit},
		state.Record{Phase: "#9", Event: "launch", Role: state.Worker, Attempt: 1},
		state.Record{Phase: "#9", Event: "blocked", Reason: state.ReasonPush},
		state.Record{Phase: "#9", Event: "retry"},
		state.Record{Phase: "gone", Event: "launch", Role: state.Worker, Attempt: 1}, // a phase no longer in the manifest
	)
	var got []string
	for _, n := range s.Outside() {
		got = append(got, n.ID+" "+string(n.State)+" "+string(n.Reason))
	}
	want := []string{"#3 merged ", "#6 away ", "#7 running ", "#8 failed exit", "#9 pending ", "#12 blocked checks"}
	if !slices.Equal(got, want) {
		t.Fatalf("outside nodes %q, want %q", got, want)
	}
	n, ok := status.OutsideNode(s.Hist, "#12", false)
	if !ok || n.Attempts != 1 || n.Detail != "ci/test failed" || !n.Outside || n.Title != "" {
		t.Fatalf("#12: %+v", n)
	}
	if n, _ := status.OutsideNode(s.Hist, "#6", false); n.Detail != "handed to a human" {
		t.Fatalf("#6: %+v", n)
	}
	if _, ok := status.OutsideNode(s.Hist, "#99", false); ok {
		t.Fatal("#99 has no record, yet is known")
	}

	r := s.Report(state.Rules{})
	var ids []string
	for _, p := range r.Phases {
		ids = append(ids, p.ID)
	}
	if want := []string{"p1", "p2", "p3", "p5", "p6", "p4", "#3", "#6", "#7", "#8", "#9", "#12"}; !slices.Equal(ids, want) {
		t.Fatalf("rows %q, want %q", ids, want)
	}
	last := r.Phases[len(r.Phases)-1]
	if !last.Outside || last.State != "blocked" || last.Reason != "checks" || last.Usage == nil {
		t.Fatalf("#12's row %+v", last)
	}
	if r.Counts["blocked"] != 0 || r.Counts["running"] != 1 || r.Counts["pending"] != 4 {
		t.Fatalf("counts %v: the manifest's phases only", r.Counts)
	}
	// No run is going on: nothing runs now; p5 and #7 were left
	// [running] by a driver that stopped, and the next run resumes them.
	if want := []string{"p5", "#7"}; len(r.Running) != 0 || !slices.Equal(r.Stopped, want) {
		t.Fatalf("running %q, stopped %q; want none running, %q stopped", r.Running, r.Stopped, want)
	}
	if c, _ := r.Usage.Cost(); r.Usage == nil || c != 0.25 {
		t.Fatalf("total cost %+v: the issues' spend counts", r.Usage)
	}
}

// status's eligible list is the scheduler's rule over the same View
// explain asks Holds on: a phase is listed exactly when it is pending and
// Holds finds nothing. Before, status listed p3 (an issue dep it ignored),
// p6 (a scope a running phase holds) and p4 (below a checkpoint).
func TestEligibleIsHoldsOverOneView(t *testing.T) {
	s := snapshot(t,
		state.Record{Phase: "#3", Event: "merged"},
		state.Record{Phase: "#12", Event: "blocked", Reason: state.ReasonChecks},
	)
	for _, tc := range []struct {
		rules state.Rules
		want  []string
	}{
		{state.Rules{}, []string{"p2"}},
		{state.Rules{KeepGoing: true}, []string{"p2", "p4"}},
		{state.Rules{IgnoreCheckpoints: true}, []string{"p2", "p4"}},
	} {
		r := s.Report(tc.rules)
		if !slices.Equal(r.Eligible, tc.want) {
			t.Errorf("rules %+v: eligible %q, want %q", tc.rules, r.Eligible, tc.want)
		}
		v := s.View(tc.rules)
		for _, n := range s.Roadmap.Nodes {
			free := n.State == manifest.Pending && len(scheduler.Holds(v, n)) == 0
			if free != slices.Contains(r.Eligible, n.ID) {
				t.Errorf("rules %+v: %s free by Holds %v, listed %v", tc.rules, n.ID, free, !free)
			}
		}
	}
}

// A cooldown journaled on the command every lane runs holds every pending
// phase, in status as in explain.
func TestEligibleHeldByACooldown(t *testing.T) {
	rules := state.Rules{Lanes: []state.RuleLane{{Cmd: "agent-a", Slots: 2}}, Slots: 2}
	s := snapshot(t,
		state.Record{Phase: "#3", Event: "merged"},
		state.Record{Phase: "p1", Event: "cooldown", Role: state.Supervisor, Until: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC), Cmd: "agent-a"},
	)
	if r := s.Report(rules); len(r.Eligible) != 0 {
		t.Fatalf("eligible %q under a cooldown on agent-a", r.Eligible)
	}
	rules.Lanes[0].Cmd = "agent-b"
	if r := s.Report(rules); !slices.Equal(r.Eligible, []string{"p2"}) {
		t.Fatalf("eligible %q on agent-b, want [p2]", r.Eligible)
	}
}

// A red promote step is reported: the report carries each step's newest
// outcome from the promote ledger, a red one with why (docs/queue.md,
// "Promote loop"); a step promoted after a red try shows promoted.
func TestReportShowsRedPromoteStep(t *testing.T) {
	t.Parallel()
	s := snapshot(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ledger := []string{
		`{"at":"` + t0.Format(time.RFC3339) + `","kind":"red","from":"main","to":"staging","pr":4,"why":"checks red: ci"}`,
		`{"at":"` + t0.Add(time.Hour).Format(time.RFC3339) + `","kind":"promoted","from":"main","to":"staging","pr":4,"changelog":"long"}`,
		`{"at":"` + t0.Add(2*time.Hour).Format(time.RFC3339) + `","kind":"red","from":"staging","to":"production","pr":5,"why":"checks red on the pull request: e2e"}`,
	}
	if err := os.MkdirAll(s.Layout.StateDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Layout.StateDir(), record.LedgerName), []byte(strings.Join(ledger, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := s.Report(state.Rules{}).Promote
	if len(got) != 2 || got[0].Kind != record.Promoted || got[0].Changelog != "" || got[1].Kind != record.Red || got[1].To != "production" || got[1].Why != "checks red on the pull request: e2e" {
		t.Fatalf("promote %+v, want main→staging promoted and staging→production red", got)
	}
}
