package transcript

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/claudopilot/claudopilot/ledger"
)

// event is the union of the fields read from the three formats' events.
// A field of an unexpected type is left empty (json skips it), so one odd
// field never turns an event into plain text.
type event struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	// Claude Code
	Model      string          `json:"model"`
	SessionID  string          `json:"session_id"`
	Message    json.RawMessage `json:"message"` // an object; Codex's error: a string
	Result     json.RawMessage `json:"result"`
	IsError    bool            `json:"is_error"`
	TotalCost  *float64        `json:"total_cost_usd"`
	NumTurns   *int64          `json:"num_turns"`
	DurationMS *int64          `json:"duration_ms"`
	Usage      *usage          `json:"usage"`
	// Codex
	ThreadID string          `json:"thread_id"`
	Item     *codexItem      `json:"item"`
	Error    json.RawMessage `json:"error"` // Codex: {message}; opencode: {name, data:{message}}
	// opencode
	Part *ocPart `json:"part"`
}

// usage is Claude's message and result usage, and Codex's turn usage.
type usage struct {
	InputTokens   *int64 `json:"input_tokens"`
	OutputTokens  *int64 `json:"output_tokens"`
	CacheCreation *int64 `json:"cache_creation_input_tokens"`
	CacheRead     *int64 `json:"cache_read_input_tokens"`
	CachedInput   *int64 `json:"cached_input_tokens"` // Codex
}

func (u *usage) figures() *Figures {
	if u == nil {
		return nil
	}
	f := &Figures{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheWrite: u.CacheCreation, CacheRead: u.CacheRead}
	if u.CachedInput != nil {
		f.CacheRead = u.CachedInput
	}
	return f
}

// cost is a reported cost if it is believable (ledger.CheckCost): the
// agent writes it, and a negative or absurd figure is shown as unknown.
func cost(c *float64) *float64 {
	if c == nil || ledger.CheckCost(*c) != nil {
		return nil
	}
	return c
}

// errorText is the message of an "error" event: Codex's {"message": …}
// or opencode's {"error": {"name", "data": {"message"}}}.
func errorText(ev *event) string {
	var s string
	if json.Unmarshal(ev.Message, &s) == nil && s != "" {
		return capped(s)
	}
	var e struct {
		Name    string `json:"name"`
		Message string `json:"message"`
		Data    struct {
			Message string `json:"message"`
		} `json:"data"`
	}
	if json.Unmarshal(ev.Error, &e) == nil {
		for _, m := range []string{e.Data.Message, e.Message, e.Name} {
			if m != "" {
				return capped(m)
			}
		}
	}
	if json.Unmarshal(ev.Error, &s) == nil && s != "" {
		return capped(s)
	}
	return "error"
}

// summaryKeys are the input fields that say what a call does, in the
// order they are looked for.
var summaryKeys = []string{"command", "cmd", "file_path", "filePath", "path", "pattern", "url", "query", "description", "prompt", "title"}

// MaxInput bounds a tool's input summary, in runes.
const MaxInput = 200

// summarise renders a tool's input in one line: the field that says what
// the call does, or the input as compact JSON, cut to MaxInput runes.
func summarise(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) == nil {
		for _, k := range summaryKeys {
			if v, ok := m[k].(string); ok && strings.TrimSpace(v) != "" {
				return oneLine(v)
			}
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			b, _ := json.Marshal(m[k])
			parts = append(parts, k+"="+string(b))
		}
		return oneLine(strings.Join(parts, " "))
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return oneLine(s)
	}
	return oneLine(string(raw))
}

// oneLine joins s's lines with " ⏎ " and cuts it to MaxInput runes.
func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	s = strings.Join(parts, " ⏎ ")
	if utf8.RuneCountInString(s) > MaxInput {
		s = string([]rune(s)[:MaxInput-1]) + "…"
	}
	return s
}

// blockText is a tool result's content: a string, or a list of blocks
// whose text parts are joined.
func blockText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var parts []string
		for _, b := range blocks {
			switch {
			case b.Type == "text" || b.Text != "":
				parts = append(parts, b.Text)
			case b.Type != "":
				parts = append(parts, "["+b.Type+"]")
			}
		}
		return strings.Join(parts, "\n")
	}
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	return string(raw)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
