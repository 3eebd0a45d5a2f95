package ledger

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
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
	// Tokens is every token the agent reported using, counted once:
	// Claude's input, output, cache creation and cache read; Codex's
	// input (which holds its cached input) and output. PHASE_MAX_TOKENS
	// counts it.
	Tokens *int64 `json:"tokens,omitempty"`
	// Sessions counts agent process starts (not reported by the agent:
	// the driver counts each start, a resumed session's too), for
	// PHASE_MAX_SESSIONS. 0: none.
	Sessions int64 `json:"sessions,omitempty"`
}

// Known is true when the run reported anything at all.
func (u Usage) Known() bool {
	return u.CostUSD != nil || u.InputTokens != nil || u.OutputTokens != nil || u.SessionID != ""
}

// maxLine bounds one line of agent output; longer lines are skipped (a
// tool result can be megabytes; the result event is small).
const maxLine = 16 << 20

// MaxAttemptCostUSD bounds one reported cost: an attempt that says it
// spent more is not believed (CheckCost).
const MaxAttemptCostUSD = 1000

// CheckCost says why a reported total_cost_usd is not a cost, or nil:
// negative, not finite, or over MaxAttemptCostUSD. The agent writes the
// figure, and the agent is not trusted: a negative one subtracted from
// the run's spend would let it run past RUN_MAX_COST_USD.
func CheckCost(c float64) error {
	switch {
	case math.IsNaN(c) || math.IsInf(c, 0):
		return fmt.Errorf("total_cost_usd %v is not a finite number", c)
	case c < 0:
		return fmt.Errorf("total_cost_usd %v is negative", c)
	case c > MaxAttemptCostUSD:
		return fmt.Errorf("total_cost_usd %v is over $%d for one attempt", c, MaxAttemptCostUSD)
	}
	return nil
}

// Parse reads an agent's output (a log) and returns what it reported,
// with a note for each cost it skipped as unreadable (CheckCost). Lines
// that are not JSON are skipped, so a log with the driver's own notes or
// plain text parses too. Several results (a run restarted in the same
// log) add up.
func Parse(r io.Reader) (Usage, []string) {
	var (
		u     Usage
		notes []string
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") || !strings.Contains(line, `"type"`) {
			continue
		}
		var ev event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			// A number too large for a float64 (1e999) leaves the rest
			// of the event read: the cost alone is unreadable.
			var te *json.UnmarshalTypeError
			if !errors.As(err, &te) || te.Field != "total_cost_usd" {
				continue
			}
			notes = append(notes, "unreadable cost skipped: total_cost_usd "+te.Value+" is not a finite number")
			ev.TotalCostUSD = nil
		}
		if ev.TotalCostUSD != nil {
			if err := CheckCost(*ev.TotalCostUSD); err != nil {
				notes = append(notes, "unreadable cost skipped: "+err.Error())
				ev.TotalCostUSD = nil
			}
		}
		ev.apply(&u)
	}
	return u, notes
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
			addTokens(&u.Tokens, ev.Usage.InputTokens, ev.Usage.OutputTokens, ev.Usage.CacheCreation, ev.Usage.CacheRead)
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
			// Codex's cached input is part of its input: not counted twice.
			addTokens(&u.Tokens, ev.Usage.InputTokens, ev.Usage.OutputTokens)
			one := int64(1)
			addI(&u.Turns, &one)
		}
	}
}

// addF adds a cost. A negative or non-finite one is never added: Parse
// skips them, but a journal written before it did may hold one. (A sum
// may well be over MaxAttemptCostUSD.)
func addF(dst **float64, v *float64) {
	if v == nil || *v < 0 || math.IsNaN(*v) || math.IsInf(*v, 0) {
		return
	}
	if *dst == nil {
		x := *v
		*dst = &x
		return
	}
	**dst += *v
}

// addTokens adds the known figures of vs to a token count; a negative
// figure (the agent writes them) is left out.
func addTokens(dst **int64, vs ...*int64) {
	for _, v := range vs {
		if v != nil && *v >= 0 {
			addI(dst, v)
		}
	}
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
	// Each side's count, so an older record without Tokens counts too.
	out.Tokens = nil
	for _, x := range []Usage{a, b} {
		if t, ok := x.TokenCount(); ok {
			addI(&out.Tokens, &t)
		}
	}
	out.Sessions += b.Sessions
	if b.SessionID != "" {
		out.SessionID = b.SessionID
	}
	return out
}

func (u Usage) clone() Usage {
	c := Usage{SessionID: u.SessionID, Sessions: u.Sessions}
	addF(&c.CostUSD, u.CostUSD)
	addI(&c.InputTokens, u.InputTokens)
	addI(&c.OutputTokens, u.OutputTokens)
	addI(&c.CacheCreation, u.CacheCreation)
	addI(&c.CacheRead, u.CacheRead)
	addI(&c.Turns, u.Turns)
	addI(&c.DurationMS, u.DurationMS)
	addI(&c.Tokens, u.Tokens)
	return c
}

// TokenCount is the tokens used and whether any were reported. A record
// written before Tokens was (an older driver's journal) counts its
// figures as Claude's are counted.
func (u Usage) TokenCount() (int64, bool) {
	if u.Tokens != nil {
		return *u.Tokens, true
	}
	var t *int64
	addTokens(&t, u.InputTokens, u.OutputTokens, u.CacheCreation, u.CacheRead)
	if t == nil {
		return 0, false
	}
	return *t, true
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
