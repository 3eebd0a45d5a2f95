package progress

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

func progressEvents() []scheduler.Event {
	t0 := time.Date(2026, 11, 29, 22, 0, 0, 0, time.Local)
	return []scheduler.Event{
		{Time: t0, Kind: scheduler.EvStart, Detail: "2 phases"},
		{Time: t0, Kind: scheduler.EvLaunch, Phase: "a", State: "running", Role: state.Worker, Attempt: 1},
		{Time: t0.Add(time.Second), Kind: scheduler.EvExit, Phase: "a", Role: state.Worker, Attempt: 1, Reason: state.ReasonGate, Detail: "the gate is red", LogPath: "/r/.claudopilot/logs/a/gate-1.log"},
		{Time: t0.Add(2 * time.Second), Kind: scheduler.EvBlocked, Phase: "a", State: "blocked", Reason: state.ReasonGate},
		{Time: t0.Add(2 * time.Second), Kind: scheduler.EvBlocked, Phase: "b", State: "blocked", Detail: "waits on a"},
		{Time: t0.Add(3 * time.Second), Kind: scheduler.EvEnd, Detail: "1 blocked"},
	}
}

func renderProgress(t *testing.T, tty, jsonOut bool) (stdout, stderr string) {
	t.Helper()
	return renderEvents(t, tty, jsonOut, progressEvents())
}

func renderEvents(t *testing.T, tty, jsonOut bool, evs []scheduler.Event) (stdout, stderr string) {
	t.Helper()
	rm, err := roadmap.Parse("/r/roadmap", []byte("1. [pending] **a** — x\n2. [pending] **b** — y (deps: a)\n"), nil, roadmap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	s := &cmdutil.Streams{Out: &out, Err: &errb, ErrIsTTY: tty}
	p := New(s, jsonOut, rm, state.Layout{Top: "/r", RoadmapRel: "roadmap"})
	ch := make(chan scheduler.Event)
	done := make(chan struct{})
	go func() { p.Consume(ch); close(done) }()
	for _, e := range evs {
		ch <- e
	}
	close(ch)
	<-done
	return out.String(), errb.String()
}

// Off a terminal: one timestamped plain line per event on stderr.
func TestProgressPlain(t *testing.T) {
	t.Parallel()
	out, errs := renderProgress(t, false, false)
	if out != "" {
		t.Errorf("progress wrote to stdout: %q", out)
	}
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if len(lines) != len(progressEvents()) {
		t.Fatalf("%d lines for %d events:\n%s", len(lines), len(progressEvents()), errs)
	}
	if strings.Contains(errs, "\x1b[") {
		t.Errorf("escape codes off a terminal:\n%q", errs)
	}
	for _, want := range []string{"22:00:01 a", "exit worker #1 reason=gate: the gate is red (log /r/.claudopilot/logs/a/gate-1.log)", "b            blocked: waits on a"} {
		if !strings.Contains(errs, want) {
			t.Errorf("missing %q in:\n%s", want, errs)
		}
	}
}

// On a terminal: a table redrawn in place.
func TestProgressTTY(t *testing.T) {
	t.Parallel()
	_, errs := renderProgress(t, true, false)
	if !strings.Contains(errs, "\x1b[") || !strings.Contains(errs, "\x1b[J") {
		t.Fatalf("no redraw on a terminal:\n%q", errs)
	}
	last := errs[strings.LastIndex(errs, "\x1b[J")+len("\x1b[J"):]
	for _, want := range []string{"2 blocked", "a ", "gate", "b ", "waits on a"} {
		if !strings.Contains(last, want) {
			t.Errorf("final table lacks %q:\n%s", want, last)
		}
	}
}

// --json: one JSON object per event on stdout, nothing on stderr.
func TestProgressJSON(t *testing.T) {
	t.Parallel()
	out, errs := renderProgress(t, false, true)
	if errs != "" {
		t.Errorf("stderr: %q", errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(progressEvents()) {
		t.Fatalf("%d lines:\n%s", len(lines), out)
	}
	var e map[string]any
	if err := json.Unmarshal([]byte(lines[2]), &e); err != nil {
		t.Fatal(err)
	}
	if e["event"] != "exit" || e["reason"] != "gate" || e["phase"] != "a" {
		t.Errorf("event = %v", e)
	}
}

// A merge waiting on the user's uncommitted file: the wait is told once,
// naming the file and what to do; the merge's retries add no lines, and
// the table keeps saying what it waits for.
func TestProgressWaitingMerge(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 22, 0, 0, 0, time.Local)
	detail := scheduler.WaitDetail([]string{"cart/cart.go"}, "")
	evs := []scheduler.Event{{Time: t0, Kind: scheduler.EvStart},
		{Time: t0, Kind: scheduler.EvLaunch, Phase: "a", State: "running", Role: state.Worker, Attempt: 1},
		{Time: t0, Kind: scheduler.EvExit, Phase: "a", Role: state.Worker, Attempt: 1},
		{Time: t0, Kind: scheduler.EvMerging, Phase: "a"},
		{Time: t0, Kind: scheduler.EvWait, Phase: "a", Files: []string{"cart/cart.go"}, Detail: detail}}
	for i := 1; i <= 10; i++ {
		evs = append(evs, scheduler.Event{Time: t0.Add(time.Duration(i) * 7 * time.Second), Kind: scheduler.EvMerging, Phase: "a"})
	}
	_, plain := renderEvents(t, false, false, evs)
	if n := strings.Count(plain, " merging"); n != 1 {
		t.Errorf("%d merging lines for a merge that waits, want 1:\n%s", n, plain)
	}
	if !strings.Contains(plain, "cart/cart.go") || !strings.Contains(plain, "commit, stash or revert") {
		t.Errorf("the wait does not name the file and what to do:\n%s", plain)
	}
	_, tty := renderEvents(t, true, false, evs)
	last := tty[strings.LastIndex(tty, "\x1b[J")+len("\x1b[J"):]
	if !strings.Contains(last, "cart/cart.go") {
		t.Errorf("the table does not name the file:\n%s", last)
	}
}

// An issue node (#11) gets a row of its own from its first event, and one
// that went away (handed to a human for review) says so.
func TestProgressIssueRows(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 22, 0, 0, 0, time.Local)
	evs := []scheduler.Event{{Time: t0, Kind: scheduler.EvStart},
		{Time: t0, Kind: scheduler.EvLaunch, Phase: "#7", State: "running", Role: state.Worker, Attempt: 1},
		{Time: t0, Kind: scheduler.EvExit, Phase: "#7", Role: state.Worker, Attempt: 1},
		{Time: t0, Kind: scheduler.EvMerging, Phase: "#7"},
		{Time: t0, Kind: scheduler.EvAway, Phase: "#7", Detail: "pull request #9 is ready for a human's review"}}
	_, tty := renderEvents(t, true, false, evs)
	last := tty[strings.LastIndex(tty, "\x1b[J")+len("\x1b[J"):]
	if !strings.Contains(last, "#7") || !strings.Contains(last, "away") || !strings.Contains(last, "human's review") {
		t.Errorf("no away row for #7:\n%s", last)
	}
}
