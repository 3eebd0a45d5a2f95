package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/claudopilot/claudopilot/scheduler"
)

// EvCooldownEnd is the notifier's own event: a cooldown's time is up.
const EvCooldownEnd = "cooldown-end"

// The promote loop's events (package promote, through engine): a step
// merged (announce: Phase "from→to", Detail the pull request and the
// changelog: issue-pilot's announce, without a chat client), and a step
// that is red (Detail why).
const (
	EvAnnounce   = "announce"
	EvPromoteRed = "promote-red"
)

// queueLen bounds the notifications waiting to run; past it they are
// dropped (and the drop logged) rather than held in memory or the loop.
const queueLen = 64

// timeout bounds one NOTIFY_CMD run.
const timeout = 30 * time.Second

// Notifier runs Cmd for each notable event.
type Notifier struct {
	Cmd string
	Env []string
	Log io.Writer // failures and drops, one line each

	mu      sync.Mutex // guards Log writes from the runner and timers
	qMu     sync.Mutex // guards closed and sends on q
	closed  bool
	q       chan scheduler.Event
	wg      sync.WaitGroup
	timers  []*time.Timer
	timerMu sync.Mutex
}

// Start begins running notifications until ctx ends or Close.
func (n *Notifier) Start(ctx context.Context) {
	n.q = make(chan scheduler.Event, queueLen)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		for ev := range n.q {
			n.run(ctx, ev)
		}
	}()
}

// Close stops the cooldown timers, runs what is queued, and waits.
func (n *Notifier) Close() {
	n.timerMu.Lock()
	for _, t := range n.timers {
		t.Stop()
	}
	n.timerMu.Unlock()
	n.qMu.Lock()
	n.closed = true
	close(n.q)
	n.qMu.Unlock()
	n.wg.Wait()
}

// Notable says whether an event is one a notification is sent for.
func Notable(ev scheduler.Event) bool {
	switch ev.Kind {
	case scheduler.EvMerged, scheduler.EvBlocked, scheduler.EvFailed, scheduler.EvEnd,
		scheduler.EvCooldown, EvCooldownEnd, scheduler.EvBudget, scheduler.EvPaused, scheduler.EvResumed, scheduler.EvLanes,
		scheduler.EvAsk, EvAnnounce, EvPromoteRed:
		// A phase parked only because it waits on another is part of
		// that one's story: one message, not one per dependent.
		return !(ev.Kind == scheduler.EvBlocked && ev.Reason == "")
	}
	return false
}

// Send queues a notification for ev if it is notable. It never blocks.
func (n *Notifier) Send(ev scheduler.Event) {
	if !Notable(ev) {
		return
	}
	if ev.Kind == scheduler.EvCooldown && ev.Until.After(time.Now()) {
		end := scheduler.Event{Kind: EvCooldownEnd, Phase: ev.Phase, Role: ev.Role, Lane: ev.Lane, Until: ev.Until}
		n.timerMu.Lock()
		n.timers = append(n.timers, time.AfterFunc(time.Until(ev.Until), func() {
			end.Time = time.Now()
			n.enqueue(end)
		}))
		n.timerMu.Unlock()
	}
	n.enqueue(ev)
}

func (n *Notifier) enqueue(ev scheduler.Event) {
	n.qMu.Lock()
	defer n.qMu.Unlock()
	if n.closed {
		return // a timer that fired as the run ended
	}
	select {
	case n.q <- ev:
	default:
		n.logf("notification dropped (%d waiting): %s", queueLen, Message(ev))
	}
}

func (n *Notifier) run(ctx context.Context, ev scheduler.Event) {
	body, err := json.Marshal(ev)
	if err != nil {
		n.logf("notification: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	c := exec.CommandContext(ctx, "sh", "-c", n.Cmd)
	// MSG too: issue-pilot's notifiers read the message there.
	c.Env = append(append([]string{}, n.Env...), "CLAUDOPILOT_NOTIFY_MSG="+Message(ev), "MSG="+Message(ev), "CLAUDOPILOT_NOTIFY_EVENT="+ev.Kind)
	c.Stdin = bytes.NewReader(append(body, '\n'))
	c.WaitDelay = time.Second
	out, err := c.CombinedOutput()
	if err != nil {
		n.logf("NOTIFY_CMD failed for %q: %v: %s", Message(ev), err, strings.TrimSpace(lastLine(out)))
	}
}

func (n *Notifier) logf(format string, args ...any) {
	if n.Log == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintf(n.Log, "claudopilot: warning: "+format+"\n", args...)
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Message is the one line a person reads on their phone.
func Message(ev scheduler.Event) string {
	switch ev.Kind {
	case scheduler.EvMerged:
		return fmt.Sprintf("claudopilot: %s merged", ev.Phase)
	case scheduler.EvBlocked:
		return fmt.Sprintf("claudopilot: %s parked (%s): %s", ev.Phase, ev.Reason, ev.Detail)
	case scheduler.EvFailed:
		return fmt.Sprintf("claudopilot: %s failed (%s); the run halts", ev.Phase, ev.Reason)
	case scheduler.EvEnd:
		return "claudopilot: run finished: " + ev.Detail
	case scheduler.EvCooldown:
		if ev.Detail != "" {
			return fmt.Sprintf("claudopilot: %s: %s", ev.Phase, ev.Detail)
		}
		return fmt.Sprintf("claudopilot: rate limit on %s: cooling down until %s", ev.Phase, ev.Until.Local().Format("15:04"))
	case EvCooldownEnd:
		return "claudopilot: rate-limit cooldown over; launches go on"
	case scheduler.EvBudget:
		return "claudopilot: " + ev.Detail
	case scheduler.EvPaused:
		return "claudopilot: paused: no new launches"
	case scheduler.EvResumed:
		return "claudopilot: resumed"
	case scheduler.EvLanes:
		return "claudopilot: lanes: " + ev.Detail
	case scheduler.EvAsk:
		return fmt.Sprintf("claudopilot: %s asks: %s (claudopilot answer %s \"…\" by %s)", ev.Phase, ev.Detail, ev.Phase, ev.Until.Local().Format("Jan 2 15:04"))
	case EvAnnounce:
		first, _, _ := strings.Cut(ev.Detail, "\n")
		return fmt.Sprintf("claudopilot: promoted %s: %s", ev.Phase, first)
	case EvPromoteRed:
		return fmt.Sprintf("claudopilot: promotion %s is red: %s", ev.Phase, ev.Detail)
	}
	return "claudopilot: " + ev.Kind + " " + ev.Phase
}
