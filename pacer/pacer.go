package pacer

import (
	"fmt"
	"math"
)

// Window is the length of a usage window in seconds: 7 days.
const Window = 604800

// Mode says how a lane wants slots.
type Mode string

const (
	// Always wants Concurrency slots until usage reaches HardStopPct.
	Always Mode = "always"
	// WindowPaced aims at a straight line through the weekly window.
	WindowPaced Mode = "window"
	// Off wants nothing.
	Off Mode = "off"
)

// Lane is one lane's pacing configuration. Zero values are not defaults:
// the caller fills every field (see Defaults).
type Lane struct {
	ID                   string
	Mode                 Mode
	Concurrency          int     // what an always lane wants
	MinConcurrency       int     // clamp of a window lane's want
	MaxConcurrency       int     //
	PaceTolerancePct     float64 // how far behind the line before catching up
	CatchupHours         float64 // hours to make up the gap in
	BurnPctPerWorkerHour float64 // window % one worker uses per hour
	FiveHourThrottlePct  float64 // five-hour use at which the want is capped
	FiveHourThrottleCap  int     //
	HardStopPct          float64 // weekly use at which the lane stops
}

// Usage is one reading of a lane's USAGE_CMD: `<pct_used> <secs_until_reset>
// [<five_hour_pct> <five_hour_secs>]`.
type Usage struct {
	OK           bool    `json:"ok"` // false: the command failed or printed nonsense
	PctUsed      float64 `json:"pct_used"`
	SecsToReset  float64 `json:"secs_until_reset"`
	HasFiveHour  bool    `json:"has_five_hour"`
	FiveHourPct  float64 `json:"five_hour_pct"`
	FiveHourSecs float64 `json:"five_hour_secs"`
}

// Resources is the machine's spare capacity and the budget rule.
type Resources struct {
	Cores          float64
	Load5          float64
	MemAvailableMB float64
	CoresPerWorker float64 // CORES_PER_WORKER, default 2
	MemMBPerWorker float64 // MEM_MB_PER_WORKER, default 3000
	MinBudget      int     // RESOURCE_MIN_BUDGET, default 3
	// Unknown: the machine could not be measured; the budget is the floor.
	Unknown bool
}

// Input is everything one pacer pass reads.
type Input struct {
	Lanes     []Lane // in LANES order
	Usage     map[string]Usage
	Resources Resources
	// Previous is each lane's concurrency from the last pass (saved
	// state); a lane whose usage cannot be read keeps it.
	Previous map[string]int
	// SwitchedOff lists lanes turned off with `claudopilot lane off`.
	SwitchedOff map[string]bool
	// Paused: the run is paused, so the pacer changes nothing.
	Paused bool
	// GateRed: the base's gate is red, so every lane is capped at 1.
	GateRed bool
}

// Result is one lane's outcome, with the figures that explain it.
type Result struct {
	ID          string
	Want        int    // what the lane asked for before the budget
	Concurrency int    // what it gets
	Why         string // one line: the rule that decided the want
}

// Plan is one pass: every lane's result and the budget shared among them.
type Plan struct {
	Lanes  []Result
	Budget int
}

// Concurrency returns lane id's concurrency in p (0 if unknown).
func (p Plan) Concurrency(id string) int {
	for _, r := range p.Lanes {
		if r.ID == id {
			return r.Concurrency
		}
	}
	return 0
}

// Pace runs one pacer pass.
func Pace(in Input) Plan {
	plan := Plan{Budget: Budget(in.Resources)}
	if in.Paused {
		for _, l := range in.Lanes {
			c := in.Previous[l.ID]
			plan.Lanes = append(plan.Lanes, Result{ID: l.ID, Want: c, Concurrency: c, Why: "paused: unchanged"})
		}
		return plan
	}
	for _, l := range in.Lanes {
		w, why := want(l, in)
		plan.Lanes = append(plan.Lanes, Result{ID: l.ID, Want: w, Why: why})
	}
	allocate(plan.Lanes, plan.Budget)
	if in.GateRed {
		for i := range plan.Lanes {
			if plan.Lanes[i].Concurrency > 1 {
				plan.Lanes[i].Concurrency = 1
				plan.Lanes[i].Why += "; capped at 1 while the base's gate is red"
			}
		}
	}
	return plan
}

// want is what one lane asks for, and why.
func want(l Lane, in Input) (int, string) {
	if in.SwitchedOff[l.ID] {
		return 0, "switched off"
	}
	u, read := in.Usage[l.ID]
	switch l.Mode {
	case Off:
		return 0, "mode off"
	case Always:
		if read && u.OK && u.PctUsed >= l.HardStopPct {
			return 0, fmt.Sprintf("usage %.0f%% ≥ hard stop %.0f%%", u.PctUsed, l.HardStopPct)
		}
		return l.Concurrency, fmt.Sprintf("always: %d", l.Concurrency)
	case WindowPaced:
		if !read || !u.OK {
			c := in.Previous[l.ID]
			return c, fmt.Sprintf("usage unreadable: keeps %d", c)
		}
		return windowWant(l, u)
	}
	return 0, fmt.Sprintf("unknown mode %q", l.Mode)
}

// windowWant aims a window lane at a straight line through the window.
func windowWant(l Lane, u Usage) (int, string) {
	if u.PctUsed >= l.HardStopPct {
		return 0, fmt.Sprintf("usage %.0f%% ≥ hard stop %.0f%%", u.PctUsed, l.HardStopPct)
	}
	expected := 100 * (1 - u.SecsToReset/Window)
	behind := expected - u.PctUsed
	if behind <= l.PaceTolerancePct {
		return 0, fmt.Sprintf("on pace: used %.1f%%, line %.1f%%", u.PctUsed, expected)
	}
	rate := l.CatchupHours * l.BurnPctPerWorkerHour
	w := l.MaxConcurrency
	if rate > 0 {
		w = int(math.Ceil(behind / rate))
	}
	w = min(max(w, l.MinConcurrency), l.MaxConcurrency)
	why := fmt.Sprintf("behind by %.1f%%: wants %d", behind, w)
	if u.HasFiveHour && u.FiveHourPct >= l.FiveHourThrottlePct && w > l.FiveHourThrottleCap {
		w = l.FiveHourThrottleCap
		why += fmt.Sprintf("; five-hour use %.0f%% ≥ %.0f%%: capped at %d", u.FiveHourPct, l.FiveHourThrottlePct, w)
	}
	return w, why
}

// Budget is how many agents the machine can take: the smaller of what the
// spare cores and the available memory allow, never below MinBudget.
func Budget(r Resources) int {
	if r.Unknown {
		return r.MinBudget
	}
	b := math.MaxInt
	if r.CoresPerWorker > 0 {
		b = min(b, int(math.Floor((r.Cores-r.Load5)/r.CoresPerWorker)))
	}
	if r.MemMBPerWorker > 0 {
		b = min(b, int(math.Floor(r.MemAvailableMB/r.MemMBPerWorker)))
	}
	return max(b, r.MinBudget)
}

// allocate shares the budget in lane order: first one slot to every lane
// that wants any, then the rest to each lane's remaining want in turn.
func allocate(lanes []Result, budget int) {
	for i := range lanes {
		if budget == 0 {
			return
		}
		if lanes[i].Want > 0 {
			lanes[i].Concurrency = 1
			budget--
		}
	}
	for i := range lanes {
		more := min(lanes[i].Want-lanes[i].Concurrency, budget)
		if more > 0 {
			lanes[i].Concurrency += more
			budget -= more
		}
	}
}
