package pacer

import (
	"strings"
	"testing"
)

// lane returns a lane with the documented defaults.
func lane(id string, m Mode) Lane {
	return Lane{
		ID: id, Mode: m, Concurrency: 3, MinConcurrency: 1, MaxConcurrency: 6,
		PaceTolerancePct: 5, CatchupHours: 4, BurnPctPerWorkerHour: 2,
		FiveHourThrottlePct: 85, FiveHourThrottleCap: 1, HardStopPct: 98,
	}
}

// roomy is a machine with room for 20 workers.
var roomy = Resources{Cores: 64, Load5: 0, MemAvailableMB: 64000, CoresPerWorker: 2, MemMBPerWorker: 3000, MinBudget: 3}

// at builds a reading where the window has secsLeft seconds to run.
func at(used, secsLeft float64) Usage { return Usage{OK: true, PctUsed: used, SecsToReset: secsLeft} }

const halfWindow = Window / 2 // expected use: 50%

func TestPace(t *testing.T) {
	withMin := lane("w", WindowPaced)
	withMin.MinConcurrency = 2
	withMax := lane("w", WindowPaced)
	withMax.MaxConcurrency = 2
	tests := []struct {
		name string
		in   Input
		want map[string]int
		why  string // a part of the first lane's Why
	}{
		{"always wants its concurrency", Input{Lanes: []Lane{lane("a", Always)}}, map[string]int{"a": 3}, "always"},
		{"always without usage still runs", Input{Lanes: []Lane{lane("a", Always)}, Usage: map[string]Usage{"a": {}}}, map[string]int{"a": 3}, "always"},
		{"always at the hard stop", Input{Lanes: []Lane{lane("a", Always)}, Usage: map[string]Usage{"a": at(98, 1000)}}, map[string]int{"a": 0}, "hard stop"},
		{"always just under the hard stop", Input{Lanes: []Lane{lane("a", Always)}, Usage: map[string]Usage{"a": at(97.9, 1000)}}, map[string]int{"a": 3}, "always"},
		{"window ahead of pace", Input{Lanes: []Lane{lane("w", WindowPaced)}, Usage: map[string]Usage{"w": at(60, halfWindow)}}, map[string]int{"w": 0}, "on pace"},
		{"window within tolerance", Input{Lanes: []Lane{lane("w", WindowPaced)}, Usage: map[string]Usage{"w": at(45, halfWindow)}}, map[string]int{"w": 0}, "on pace"},
		// behind 10: ⌈10 / (4×2)⌉ = 2
		{"window behind", Input{Lanes: []Lane{lane("w", WindowPaced)}, Usage: map[string]Usage{"w": at(40, halfWindow)}}, map[string]int{"w": 2}, "behind by 10.0%"},
		// behind 6: ⌈6/8⌉ = 1, clamped up to 2
		{"window clamped at the low end", Input{Lanes: []Lane{withMin}, Usage: map[string]Usage{"w": at(44, halfWindow)}}, map[string]int{"w": 2}, "wants 2"},
		// behind 50: ⌈50/8⌉ = 7, clamped down to 2
		{"window clamped at the high end", Input{Lanes: []Lane{withMax}, Usage: map[string]Usage{"w": at(0, halfWindow)}}, map[string]int{"w": 2}, "wants 2"},
		{"window default max 6", Input{Lanes: []Lane{lane("w", WindowPaced)}, Usage: map[string]Usage{"w": at(0, halfWindow)}}, map[string]int{"w": 6}, "wants 6"},
		{"window at the hard stop", Input{Lanes: []Lane{lane("w", WindowPaced)}, Usage: map[string]Usage{"w": at(99, 0)}}, map[string]int{"w": 0}, "hard stop"},
		{"five-hour hot caps the want", Input{Lanes: []Lane{lane("w", WindowPaced)},
			Usage: map[string]Usage{"w": {OK: true, PctUsed: 0, SecsToReset: halfWindow, HasFiveHour: true, FiveHourPct: 85}}},
			map[string]int{"w": 1}, "five-hour"},
		{"five-hour cool leaves the want", Input{Lanes: []Lane{lane("w", WindowPaced)},
			Usage: map[string]Usage{"w": {OK: true, PctUsed: 0, SecsToReset: halfWindow, HasFiveHour: true, FiveHourPct: 84}}},
			map[string]int{"w": 6}, "wants 6"},
		{"unreadable usage keeps the previous value", Input{Lanes: []Lane{lane("w", WindowPaced)},
			Usage: map[string]Usage{"w": {OK: false}}, Previous: map[string]int{"w": 4}}, map[string]int{"w": 4}, "keeps 4"},
		{"unreadable usage with no previous value", Input{Lanes: []Lane{lane("w", WindowPaced)}}, map[string]int{"w": 0}, "keeps 0"},
		{"mode off", Input{Lanes: []Lane{lane("o", Off)}}, map[string]int{"o": 0}, "mode off"},
		{"switched off", Input{Lanes: []Lane{lane("a", Always)}, SwitchedOff: map[string]bool{"a": true}}, map[string]int{"a": 0}, "switched off"},
		{"switched back on", Input{Lanes: []Lane{lane("a", Always)}, SwitchedOff: map[string]bool{"a": false}}, map[string]int{"a": 3}, "always"},
		{"paused changes nothing", Input{Lanes: []Lane{lane("a", Always), lane("w", WindowPaced)}, Paused: true,
			Previous: map[string]int{"a": 1, "w": 5}, Usage: map[string]Usage{"w": at(99, 0)}}, map[string]int{"a": 1, "w": 5}, "paused"},
		{"gate red caps every lane at 1", Input{Lanes: []Lane{lane("a", Always), lane("b", Always), lane("o", Off)}, GateRed: true},
			map[string]int{"a": 1, "b": 1, "o": 0}, "gate is red"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.in.Resources == (Resources{}) {
				tc.in.Resources = roomy
			}
			p := Pace(tc.in)
			for id, w := range tc.want {
				if got := p.Concurrency(id); got != w {
					t.Errorf("lane %s: concurrency %d, want %d (%+v)", id, got, w, p.Lanes)
				}
			}
			if !strings.Contains(p.Lanes[0].Why, tc.why) {
				t.Errorf("why %q does not say %q", p.Lanes[0].Why, tc.why)
			}
		})
	}
}

func TestBudget(t *testing.T) {
	base := Resources{CoresPerWorker: 2, MemMBPerWorker: 3000, MinBudget: 3}
	tests := []struct {
		name             string
		cores, load, mem float64
		want             int
	}{
		{"cpu bound", 16, 2, 64000, 7},    // ⌊14/2⌋
		{"memory bound", 64, 0, 12500, 4}, // ⌊12500/3000⌋
		{"floor when the machine is busy", 2, 4, 1000, 3},
		{"floor when the load exceeds the cores", 8, 9, 64000, 3},
		{"exact", 20, 0, 30000, 10},
	}
	for _, tc := range tests {
		r := base
		r.Cores, r.Load5, r.MemAvailableMB = tc.cores, tc.load, tc.mem
		if got := Budget(r); got != tc.want {
			t.Errorf("%s: budget %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestAllocation shares a budget of 5 among lanes that want 3, 0, 4 and 2:
// first one each to the lanes that want any (3 slots), then the remaining
// 2 in LANES order to the first lane's remaining want.
func TestAllocation(t *testing.T) {
	a, b, c, d := lane("a", Always), lane("b", Off), lane("c", Always), lane("d", Always)
	c.Concurrency, d.Concurrency = 4, 2
	small := roomy
	small.Cores, small.MinBudget = 10, 0 // ⌊10/2⌋ = 5
	p := Pace(Input{Lanes: []Lane{a, b, c, d}, Resources: small})
	if p.Budget != 5 {
		t.Fatalf("budget %d, want 5", p.Budget)
	}
	want := map[string]int{"a": 3, "b": 0, "c": 1, "d": 1}
	for id, w := range want {
		if got := p.Concurrency(id); got != w {
			t.Errorf("lane %s: %d, want %d (%+v)", id, got, w, p.Lanes)
		}
	}
	// A budget smaller than the lanes that want: the first ones get one.
	small.Cores = 4 // 2
	p = Pace(Input{Lanes: []Lane{a, b, c, d}, Resources: small})
	want = map[string]int{"a": 1, "b": 0, "c": 1, "d": 0}
	for id, w := range want {
		if got := p.Concurrency(id); got != w {
			t.Errorf("budget 2: lane %s: %d, want %d (%+v)", id, got, w, p.Lanes)
		}
	}
}

func TestBudgetUnknownIsTheFloor(t *testing.T) {
	if got := Budget(Resources{Unknown: true, MinBudget: 3, CoresPerWorker: 2}); got != 3 {
		t.Errorf("got %d", got)
	}
}

// TestPassReadsCommands runs real usage and probe commands.
func TestPassReadsCommands(t *testing.T) {
	w := LaneConfig{Lane: lane("w", WindowPaced), Cmd: "x", UsageCmd: "echo 40 302400"}
	bad := LaneConfig{Lane: lane("b", WindowPaced), Cmd: "x", UsageCmd: "exit 1"}
	s := Settings{Lanes: []LaneConfig{w, bad}, ProbeCmd: "echo 8 0 64000", Resources: Resources{CoresPerWorker: 2, MemMBPerWorker: 3000, MinBudget: 1}}
	p, u := Pass(t.Context(), s, map[string]int{"b": 1}, nil, false, false)
	if !u["w"].OK || u["b"].OK {
		t.Fatalf("usage %+v", u)
	}
	if p.Budget != 4 || p.Concurrency("w") != 2 || p.Concurrency("b") != 1 {
		t.Fatalf("plan %+v", p)
	}
	s.ProbeCmd = "echo nonsense"
	if p, _ := Pass(t.Context(), s, nil, nil, false, false); p.Budget != 1 {
		t.Fatalf("unreadable probe: budget %d, want the floor 1", p.Budget)
	}
}
