package scheduler

import (
	"slices"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/state"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
)

// Holds is the one statement of a pending phase's eligibility: the loop
// and explain both ask it.
func TestHolds(t *testing.T) {
	t.Parallel()
	text := manifestOf(
		"[merged] **a** — A (deps: none) (owns: x/)",
		"[running] **b** — B (deps: none) (owns: x/y.go) (lane: one)",
		"[pending] **c** — C (deps: a, b, #12) (owns: x/) (lane: one)",
	) + "\n<!-- LOOP-CHECKPOINT: stop -->\n\n4. [pending] **d** — D (deps: none)\n"
	rm, err := roadmap.Parse("/rm", []byte(text), nil, roadmap.Options{External: roadmap.IsIssueRef})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lanes := []Lane{{ID: "one", Cmd: "cmd-1", SupervisorCmd: "cmd-1", Fallback: "two"}, {ID: "two", Cmd: "cmd-2", SupervisorCmd: "cmd-2"}}
	cool := state.Cooldowns{{Cmd: "cmd-1", Role: state.Supervisor}: now.Add(time.Hour)}
	v := View{
		Roadmap: rm, State: roadmap.FileState,
		Held:     func(n *roadmap.Node) bool { return n.State == manifest.Running },
		Cooldown: func(cmd string) time.Time { return cool.For(cmd, state.Worker) },
		Cmds:     func(n *roadmap.Node) []string { return LaneCmds(lanes, n, state.Worker) },
		Now:      now,
	}
	kinds := func(n string) []HoldKind {
		var out []HoldKind
		for _, h := range Holds(v, rm.Node(n)) {
			out = append(out, h.Kind)
		}
		return out
	}
	// c: b not merged, #12 not done, scope taken by running b; its lane's
	// fallback is free, so no cooldown holds it.
	if got := kinds("c"); !slices.Equal(got, []HoldKind{HoldDep, HoldExternal, HoldScope}) {
		t.Errorf("c holds %v", got)
	}
	// d: below the checkpoint; it may run on either lane, one is free.
	if got := kinds("d"); !slices.Equal(got, []HoldKind{HoldCheckpoint}) {
		t.Errorf("d holds %v", got)
	}
	v.KeepGoing = true
	if got := kinds("d"); len(got) != 0 {
		t.Errorf("KEEP_GOING: d holds %v", got)
	}
	v.KeepGoing, v.IgnoreCheckpoints = false, true
	if got := kinds("d"); len(got) != 0 {
		t.Errorf("IGNORE_LOOP_CHECKPOINTS: d holds %v", got)
	}
	// Both of c's commands cool down (the supervisor's limit on cmd-1 is
	// the worker's too): the cooldown holds it, until the first ends.
	cool[state.CoolKey{Cmd: "cmd-2", Role: state.Worker}] = now.Add(time.Minute)
	v.ExternalDone = func(id string) bool { return id == "#12" }
	hs := Holds(v, rm.Node("c"))
	if last := hs[len(hs)-1]; last.Kind != HoldCooldown || !last.Until.Equal(now.Add(time.Minute)) {
		t.Errorf("c holds %+v, want a cooldown until %v last", hs, now.Add(time.Minute))
	}
	for _, h := range hs {
		if h.Kind == HoldExternal {
			t.Errorf("#12 is done, still holds c")
		}
	}
}
