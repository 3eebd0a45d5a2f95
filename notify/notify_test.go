package notify

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

// TestEachEvent: every notable event runs NOTIFY_CMD once, with the message
// in the environment and the event as JSON on stdin, in order; others run
// nothing.
func TestEachEvent(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	n := &Notifier{Cmd: `printf '%s|' "$CLAUDOPILOT_NOTIFY_MSG" >> "$OUT"; cat >> "$OUT"`, Env: []string{"OUT=" + out, "PATH=" + os.Getenv("PATH")}}
	n.Start(t.Context())
	past := time.Now().Add(-time.Second) // a cooldown already over: no end timer
	evs := []scheduler.Event{
		{Kind: scheduler.EvLaunch, Phase: "a"}, // not notable
		{Kind: scheduler.EvMerged, Phase: "a"},
		{Kind: scheduler.EvBlocked, Phase: "b", Reason: state.ReasonGate, Detail: "red"},
		{Kind: scheduler.EvBlocked, Phase: "c", Detail: "waits on b"}, // a dependent: no message
		{Kind: scheduler.EvFailed, Phase: "d", Reason: state.ReasonExit},
		{Kind: scheduler.EvCooldown, Phase: "e", Until: past},
		{Kind: EvCooldownEnd},
		{Kind: scheduler.EvBudget, Detail: "run budget reached: $1.00 of $1.00"},
		{Kind: scheduler.EvPaused},
		{Kind: scheduler.EvResumed},
		{Kind: scheduler.EvEnd, Detail: "all merged"},
	}
	for _, ev := range evs {
		n.Send(ev)
	}
	n.Close()
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	want := []string{
		"claudopilot: a merged",
		"claudopilot: b parked (gate): red",
		"claudopilot: d failed (exit); the run halts",
		"claudopilot: rate limit on e: cooling down until",
		"claudopilot: rate-limit cooldown over; launches go on",
		"claudopilot: run budget reached: $1.00 of $1.00",
		"claudopilot: paused: no new launches",
		"claudopilot: resumed",
		"claudopilot: run finished: all merged",
	}
	if len(lines) != len(want) {
		t.Fatalf("%d notifications, want %d:\n%s", len(lines), len(want), b)
	}
	for i, l := range lines {
		msg, body, _ := strings.Cut(l, "|")
		if !strings.HasPrefix(msg, want[i]) {
			t.Errorf("notification %d: %q, want %q", i, msg, want[i])
		}
		var ev scheduler.Event
		if err := json.Unmarshal([]byte(body), &ev); err != nil {
			t.Errorf("notification %d: stdin %q is not the event: %v", i, body, err)
		}
	}
}

// A message with shell metacharacters reaches the command as data.
func TestMessageIsNeverShell(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	n := &Notifier{Cmd: `printf '%s' "$CLAUDOPILOT_NOTIFY_MSG" > "$OUT"`, Env: []string{"OUT=" + out, "PATH=" + os.Getenv("PATH")}}
	n.Start(t.Context())
	n.Send(scheduler.Event{Kind: scheduler.EvBlocked, Phase: "p", Reason: "gate", Detail: "$(touch " + filepath.Join(dir, "pwned") + ")`id`;"})
	n.Close()
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Fatal("the message was run as shell")
	}
	b, _ := os.ReadFile(out)
	if !strings.Contains(string(b), "$(touch") {
		t.Errorf("message %q", b)
	}
}

// A failing or hanging notifier is logged and never blocks Send.
func TestFailuresLoggedSendNeverBlocks(t *testing.T) {
	var log bytes.Buffer
	n := &Notifier{Cmd: "echo nope >&2; exit 3", Env: []string{"PATH=" + os.Getenv("PATH")}, Log: &log}
	n.Start(t.Context())
	for range queueLen * 3 {
		n.Send(scheduler.Event{Kind: scheduler.EvMerged, Phase: "x"}) // must return at once, even when the queue is full
	}
	n.Close()
	if !strings.Contains(log.String(), "NOTIFY_CMD failed for \"claudopilot: x merged\": exit status 3: nope") {
		t.Errorf("log:\n%s", log.String())
	}
}

// A cooldown's end is notified when its time is up.
func TestCooldownEnd(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	n := &Notifier{Cmd: `echo "$CLAUDOPILOT_NOTIFY_EVENT" >> "$OUT"`, Env: []string{"OUT=" + out, "PATH=" + os.Getenv("PATH")}}
	n.Start(t.Context())
	n.Send(scheduler.Event{Kind: scheduler.EvCooldown, Phase: "a", Until: time.Now().Add(50 * time.Millisecond)})
	deadline := time.Now().Add(30 * time.Second) // an upper bound
	for {
		b, _ := os.ReadFile(out)
		if strings.Contains(string(b), EvCooldownEnd) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no cooldown-end notification: %q", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	n.Close()
}

// issue-pilot's notifiers read the message in $MSG (NOTIFY_CMD='curl -s
// -d "$MSG" ntfy.sh/topic'): it is set as well.
func TestMessageInMSG(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	n := &Notifier{Cmd: `printf '%s' "$MSG" > "$OUT"`, Env: []string{"OUT=" + out, "PATH=" + os.Getenv("PATH")}}
	n.Start(t.Context())
	n.Send(scheduler.Event{Kind: scheduler.EvMerged, Phase: "p"})
	n.Close()
	if b, _ := os.ReadFile(out); string(b) != "claudopilot: p merged" {
		t.Errorf("$MSG = %q", b)
	}
}

// An agent's question is notified once, with how to answer it.
func TestAskNotified(t *testing.T) {
	ev := scheduler.Event{Kind: scheduler.EvAsk, Phase: "p3", Detail: "Postgres or SQLite?", Until: time.Now().Add(24 * time.Hour)}
	if !Notable(ev) {
		t.Fatal("a question is not notified")
	}
	if m := Message(ev); !strings.HasPrefix(m, `claudopilot: p3 asks: Postgres or SQLite? (claudopilot answer p3 "…" by `) {
		t.Errorf("message %q", m)
	}
}
