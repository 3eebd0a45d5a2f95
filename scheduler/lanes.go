package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/state"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
)

// Lane is one agent CLI (and account) the loop launches on, with its own
// slots and its own rate limit.
type Lane struct {
	ID            string
	Cmd           string // the worker's command
	SupervisorCmd string // the supervisor's command
	ResumeCmd     string // the command that carries on in a worker's session ("": it starts over)
	Fallback      string // the lane used while this one cools down
	Slots         int    // agents it may run at once; the pacer changes it
	// Account is the configuration folder of the lane's account
	// (LANE_<id>_CREDENTIALS), given to its agents as CLAUDE_CONFIG_DIR;
	// "" the user's own. Lanes on one account share its quota.
	Account string
	// Attach runs its agents on a pseudo-terminal (LANE_<id>_ATTACH).
	Attach bool
}

// Control changes a running loop from outside: the pause switch and the
// pacer's slots per lane. Nil fields leave things as they are.
type Control struct {
	Pause *bool
	Slots map[string]int
	// Drain: launch nothing more, finish what runs (and its merges), then
	// end the run with success.
	Drain bool
	// Answers are the user's answers to agents' questions, by node id
	// (claudopilot answer, the page, an issue's /answer).
	Answers map[string]Answer
	// Poke names phases whose running worker is stopped and relaunched
	// in its session, at no attempt (.claudopilot/control/<id>.poke).
	Poke []string
}

// Answer is the user's answer to the question a node's agent asked at
// Asked (the ask's time, so an answer meant for one question never
// answers a later one; zero: whatever is asked now).
type Answer struct {
	Asked time.Time `json:"asked,omitzero"`
	Text  string    `json:"text"`
}

// laneSlot is a lane and what runs on it now.
type laneSlot struct {
	Lane
	running int
}

// newLanes builds the lanes of a run. Without LANES there is one lane made
// of AGENT_CMD and MAX_PARALLEL, which is exactly the behaviour before
// lanes existed.
func newLanes(cfg Config) []*laneSlot {
	if len(cfg.Lanes) == 0 {
		return []*laneSlot{{Lane: Lane{Cmd: cfg.AgentCmd, SupervisorCmd: cfg.SupervisorCmd, Slots: cfg.MaxParallel}}}
	}
	out := make([]*laneSlot, len(cfg.Lanes))
	for i, l := range cfg.Lanes {
		out[i] = &laneSlot{Lane: l}
	}
	return out
}

// cmdOf is the command a role runs on a lane.
func (l *laneSlot) cmdOf(r state.Role) string {
	if r == state.Supervisor {
		return l.SupervisorCmd
	}
	return l.Cmd
}

// quotaOf keys a role's quota on a lane (its usage-limit breaker,
// breaker.go) by its account: the lanes of one account share it whatever
// command they run; two accounts do not.
func (l *laneSlot) quotaOf(r state.Role) string { return QuotaKey(l.cmdOf(r), l.Account) }

// QuotaKey keys a usage limit: the lane's account (LANE_<id>_CREDENTIALS'
// folder) when it names one, else its command (the user's own account,
// one quota per command as before accounts were named).
func QuotaKey(cmd, account string) string {
	if account == "" {
		return cmd
	}
	return "account " + account
}

func (s *Scheduler) cooling(l *laneSlot, r state.Role, now time.Time) bool {
	return s.cooldown[l.quotaOf(r)].After(now)
}

// usable is true when l has a free slot and no cooldown for role r.
func (s *Scheduler) usable(l *laneSlot, r state.Role, now time.Time) bool {
	return l != nil && l.running < l.Slots && !s.cooling(l, r, now)
}

// laneFor picks the lane for p's next attempt by role r, or nil when none
// may take it now, by the lane rule (PickLane) from its home (HomeLane).
func (s *Scheduler) laneFor(p *phase, r state.Role, now time.Time) *laneSlot {
	if s.paused || s.budgetHit || s.draining {
		return nil
	}
	ranOn := ""
	if p.lane != nil {
		ranOn = p.lane.ID
	}
	home := HomeLane(p.n.Lane, ranOn, p.lane != nil)
	loads := make([]LaneLoad, len(s.lanes))
	for i, l := range s.lanes {
		loads[i] = LaneLoad{Lane: l.Lane, Running: l.running, Cooling: s.cooling(l, r, now)}
	}
	if i, _ := PickLane(loads, home); i >= 0 {
		return s.lanes[i]
	}
	return nil
}

// LaneLoad is a lane as the lane rule reads it: its slots (Lane.Slots),
// the agents running on it, and whether its quota cools down for the role
// at hand.
type LaneLoad struct {
	Lane
	Running int
	Cooling bool
}

func (l LaneLoad) usable() bool { return l.Running < l.Slots && !l.Cooling }

// HomeLane is the lane a phase's next attempt is bound to, for the lane
// rule (PickLane), the loop's (laneFor) and explain's: the lane its last
// attempt in this run ran on (ran), so a relaunch or a retry keeps its lane
// and the CLI that can resume its session; else the lane its (lane: …)
// names ("" none). The loop remembers the lane in memory, explain reads it
// from the journal (state.PhaseHistory.LastLane).
func HomeLane(named, ranOn string, ran bool) string {
	if ran {
		return ranOn
	}
	return named
}

// PickLane is the lane rule, the loop's (laneFor) and explain's: the
// index of the lane a phase's next attempt runs on, or -1 and the lanes
// that hold it (full, or cooling down). home is the lane the phase is
// bound to ("" or a lane not in lanes: none). A bound phase runs on its
// lane; while that lane cools down its FALLBACK takes over. A phase bound
// to no lane takes the first lane with a free slot, in LANES order.
func PickLane(lanes []LaneLoad, home string) (int, []LaneLoad) {
	h := -1
	if home != "" {
		h = slices.IndexFunc(lanes, func(l LaneLoad) bool { return l.ID == home })
	}
	if h < 0 {
		for i, l := range lanes {
			if l.usable() {
				return i, nil
			}
		}
		return -1, lanes
	}
	if lanes[h].usable() {
		return h, nil
	}
	held := []LaneLoad{lanes[h]}
	if fb := lanes[h].Fallback; lanes[h].Cooling && fb != "" {
		if i := slices.IndexFunc(lanes, func(l LaneLoad) bool { return l.ID == fb }); i >= 0 {
			if lanes[i].usable() {
				return i, nil
			}
			held = append(held, lanes[i])
		}
	}
	return -1, held
}

// FileLaneLoads are the lanes of a run's journaled rules as the lane rule
// reads them outside the loop (explain): their slots as the run has them
// now (state.LastRules), the agents the journal has running on each (hist,
// of a live run) and the slots lent to side runs (side, state.SideRuns),
// and the cooldowns of their quotas for workers at now.
func FileLaneLoads(rules state.Rules, hist map[string]*state.PhaseHistory, side map[string]int, cool state.Cooldowns, now time.Time) []LaneLoad {
	running := maps.Clone(side)
	if running == nil {
		running = map[string]int{}
	}
	for _, h := range hist {
		if lane, ok := h.RunningOn(); ok {
			running[lane]++
		}
	}
	lanes := RuleLanes(rules)
	out := make([]LaneLoad, len(lanes))
	for i, l := range lanes {
		slot := laneSlot{Lane: l}
		out[i] = LaneLoad{Lane: l, Running: running[l.ID], Cooling: cool.For(slot.quotaOf(state.Worker), state.Worker).After(now)}
	}
	return out
}

// freeSlots counts free slots on lanes not cooling down for workers.
func (s *Scheduler) freeSlots(now time.Time) int {
	if s.paused || s.budgetHit || s.draining {
		return 0
	}
	n := 0
	for _, l := range s.lanes {
		if !s.cooling(l, state.Worker, now) && l.running < l.Slots {
			n += l.Slots - l.running
		}
	}
	return n
}

// nextCooldownEnd is the earliest future end of a lane's cooldown.
func (s *Scheduler) cooldownEnds(consider func(time.Time)) {
	for _, l := range s.lanes {
		consider(s.cooldown[l.quotaOf(state.Worker)])
		consider(s.cooldown[l.quotaOf(state.Supervisor)])
	}
}

// heldBack is true when eligible work waits only for a lane: a cooldown
// to end, a pause to be lifted, or the pacer to give a lane slots. The loop
// then waits instead of ending the run.
func (s *Scheduler) heldBack(now time.Time) bool {
	if s.budgetHit || s.draining {
		return false // nothing will start again in this run
	}
	cooling := false
	for _, l := range s.lanes {
		if s.cooling(l, state.Worker, now) {
			cooling = true
		}
	}
	external := s.cfg.Controls != nil && (s.paused || s.freeSlots(now) == 0)
	if !cooling && !external {
		return false
	}
	limit := s.checkpointLine()
	for _, p := range s.phases {
		if p.state == manifest.Pending && !p.busy && (limit == 0 || p.n.Line < limit) && s.depsMerged(p) {
			return true
		}
	}
	return false
}

// onControl applies a pause switch or new lane slots.
func (s *Scheduler) onControl(c Control) {
	if c.Pause != nil && *c.Pause != s.paused {
		s.paused = *c.Pause
		kind, detail := EvResumed, "launches resume"
		if s.paused {
			kind, detail = EvPaused, "no new launches; running agents go on"
		}
		s.record(state.Record{Event: kind})
		s.emit(Event{Kind: kind, Detail: detail})
	}
	if c.Drain && !s.draining {
		s.draining = true
		s.record(state.Record{Event: EvDrain})
		s.emit(Event{Kind: EvDrain, Detail: "draining: no new launches; what runs finishes and merges, then the run stops"})
	}
	s.onAnswers(c.Answers)
	for _, id := range c.Poke {
		s.pokeRunning(id)
	}
	if len(c.Slots) == 0 {
		return
	}
	var changed []string
	for _, l := range s.lanes {
		n, ok := c.Slots[l.ID]
		if !ok || n == l.Slots {
			continue
		}
		changed = append(changed, fmt.Sprintf("%s %d→%d", laneName(l.ID), l.Slots, n))
		l.Slots = n
	}
	if len(changed) > 0 {
		sort.Strings(changed)
		detail := "concurrency " + strings.Join(changed, ", ")
		slots := make(map[string]int, len(s.lanes))
		for _, l := range s.lanes {
			slots[l.ID] = l.Slots
		}
		// The slots themselves, for explain: the detail is for people.
		s.record(state.Record{Event: EvLanes, Detail: detail, Slots: slots})
		s.emit(Event{Kind: EvLanes, Detail: detail})
	}
}

func laneName(id string) string {
	if id == "" {
		return "default"
	}
	return id
}

// slotsText says how many agents may run: "max 3 in parallel", or each
// lane's slots.
func (s *Scheduler) slotsText() string {
	if len(s.cfg.Lanes) == 0 {
		return fmt.Sprintf("max %d in parallel", s.lanes[0].Slots)
	}
	var parts []string
	for _, l := range s.lanes {
		parts = append(parts, fmt.Sprintf("%s %d", l.ID, l.Slots))
	}
	return "lanes " + strings.Join(parts, ", ")
}

func (s *Scheduler) gateState(red bool) {
	if s.cfg.GateState != nil {
		s.cfg.GateState(red)
	}
}

// LaneCmds are the quotas (QuotaKey: the commands, and their accounts)
// phase n may run on in role r, as laneFor picks them: its lane (the one
// it names) and that lane's FALLBACK, or every lane when it names none.
// Without LANES, lanes is the one lane of AGENT_CMD.
func LaneCmds(lanes []Lane, n *roadmap.Node, r state.Role) []string {
	var home *laneSlot
	slots := make([]*laneSlot, len(lanes))
	for i, l := range lanes {
		slots[i] = &laneSlot{Lane: l}
		if n.Lane != "" && l.ID == n.Lane {
			home = slots[i]
		}
	}
	var out []string
	if home == nil {
		for _, l := range slots {
			out = append(out, l.quotaOf(r))
		}
		return out
	}
	out = append(out, home.quotaOf(r))
	for _, l := range slots {
		if home.Fallback != "" && l.ID == home.Fallback {
			out = append(out, l.quotaOf(r))
		}
	}
	return out
}
