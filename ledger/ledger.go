package ledger

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Usage is what one agent run reported. Nil pointers are unknown.
type Usage struct {
	CostUSD       *float64 `json:"cost_usd,omitempty"`
	InputTokens   *int64   `json:"input_tokens,omitempty"`
	OutputTokens  *int64   `json:"output_tokens,omitempty"`
	CacheCreation *int64   `json:"cache_creation_tokens,omitempty"`
	CacheRead     *int64   `json:"cache_read_tokens,omitempty"`
	Turns         *int64   `json:"turns,omitempty"`
	DurationMS    *int64   `json:"duration_ms,omitempty"`
	SessionID     string   `json:"session_id,omitempty"`
}

// Known is true when the run reported anything at all.
func (u Usage) Known() bool {
	return u.CostUSD != nil || u.InputTokens != nil || u.OutputTokens != nil || u.SessionID != ""
}

// maxLine bounds one line of agent output; longer lines are skipped (a
// tool result can be megabytes; the result event is small).
const maxLine = 16 << 20

// Parse reads an agent's output (a log) and returns what it reported.
// Lines that are not JSON are skipped, so a log with the driver's own notes
// or plain text parses too. Several results (a run restarted in the same
// log) add up.
func Parse(r io.Reader) Usage {
	var u Usage
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") || !strings.Contains(line, `"type"`) {
			continue
		}
		var ev event
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		ev.apply(&u)
	}
	return u
}

// event is the union of the fields this package reads from Claude's and
// Codex's events.
type event struct {
	Type string `json:"type"`
	// Claude: {"type":"result", ...}
	TotalCostUSD *float64 `json:"total_cost_usd"`
	NumTurns     *int64   `json:"num_turns"`
	DurationMS   *int64   `json:"duration_ms"`
	SessionID    string   `json:"session_id"`
	Usage        *struct {
		InputTokens       *int64 `json:"input_tokens"`
		OutputTokens      *int64 `json:"output_tokens"`
		CacheCreation     *int64 `json:"cache_creation_input_tokens"`
		CacheRead         *int64 `json:"cache_read_input_tokens"`
		CachedInputTokens *int64 `json:"cached_input_tokens"` // Codex
	} `json:"usage"`
	// Codex: {"type":"thread.started","thread_id":…}
	ThreadID string `json:"thread_id"`
}

func (ev event) apply(u *Usage) {
	switch ev.Type {
	case "result": // Claude Code
		addF(&u.CostUSD, ev.TotalCostUSD)
		addI(&u.Turns, ev.NumTurns)
		addI(&u.DurationMS, ev.DurationMS)
		if ev.SessionID != "" {
			u.SessionID = ev.SessionID
		}
		if ev.Usage != nil {
			addI(&u.InputTokens, ev.Usage.InputTokens)
			addI(&u.OutputTokens, ev.Usage.OutputTokens)
			addI(&u.CacheCreation, ev.Usage.CacheCreation)
			addI(&u.CacheRead, ev.Usage.CacheRead)
		}
	case "system": // Claude's init event names the session first
		if ev.SessionID != "" && u.SessionID == "" {
			u.SessionID = ev.SessionID
		}
	case "thread.started": // Codex
		if ev.ThreadID != "" {
			u.SessionID = ev.ThreadID
		}
	case "turn.completed": // Codex
		if ev.Usage != nil {
			addI(&u.InputTokens, ev.Usage.InputTokens)
			addI(&u.OutputTokens, ev.Usage.OutputTokens)
			addI(&u.CacheRead, ev.Usage.CachedInputTokens)
			one := int64(1)
			addI(&u.Turns, &one)
		}
	}
}

func addF(dst **float64, v *float64) {
	if v == nil {
		return
	}
	if *dst == nil {
		x := *v
		*dst = &x
		return
	}
	**dst += *v
}

func addI(dst **int64, v *int64) {
	if v == nil {
		return
	}
	if *dst == nil {
		x := *v
		*dst = &x
		return
	}
	**dst += *v
}

// Add returns the sum of two usages; a figure unknown in both stays
// unknown. The session is b's when it has one.
func Add(a, b Usage) Usage {
	out := a.clone()
	addF(&out.CostUSD, b.CostUSD)
	addI(&out.InputTokens, b.InputTokens)
	addI(&out.OutputTokens, b.OutputTokens)
	addI(&out.CacheCreation, b.CacheCreation)
	addI(&out.CacheRead, b.CacheRead)
	addI(&out.Turns, b.Turns)
	addI(&out.DurationMS, b.DurationMS)
	if b.SessionID != "" {
		out.SessionID = b.SessionID
	}
	return out
}

func (u Usage) clone() Usage {
	c := Usage{SessionID: u.SessionID}
	addF(&c.CostUSD, u.CostUSD)
	addI(&c.InputTokens, u.InputTokens)
	addI(&c.OutputTokens, u.OutputTokens)
	addI(&c.CacheCreation, u.CacheCreation)
	addI(&c.CacheRead, u.CacheRead)
	addI(&c.Turns, u.Turns)
	addI(&c.DurationMS, u.DurationMS)
	return c
}

// Cost is the cost in dollars and whether it is known.
func (u Usage) Cost() (float64, bool) {
	if u.CostUSD == nil {
		return 0, false
	}
	return *u.CostUSD, true
}

// CostText renders a cost for people: "$1.23", or "unknown".
func CostText(u Usage) string {
	if c, ok := u.Cost(); ok {
		return fmt.Sprintf("$%.2f", c)
	}
	return "unknown"
}
