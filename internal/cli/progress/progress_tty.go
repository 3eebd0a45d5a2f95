package progress

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/proc"
)

// The live table on a terminal. Every line is cut to the terminal's width
// less one column, read at each redraw, so nothing wraps (a wrapped line
// would break the count of lines to move up, and stale tables would
// scroll up the screen); after a resize the old table is cleared by the
// rows it takes at the new width.

// defaultWidth is used when the terminal's width cannot be read.
const defaultWidth = 80

func (p *View) width() int {
	if p.s.Width != nil {
		if w := p.s.Width(); w > 0 {
			return w
		}
	}
	return defaultWidth
}

// shownState is a row's state as the table shows it: a running phase is
// "gate" while a gate runs, "merging" while the merge owner has it,
// "waiting" while its merge waits, and "stopped" once an interrupt ended
// its agent.
func (r *row) shownState() string {
	if r.state != string(manifest.Running) {
		return r.state
	}
	switch {
	case r.stopped:
		return "stopped"
	case strings.HasPrefix(r.note, "waiting"), strings.HasPrefix(r.note, "waits for"):
		return "waiting"
	case r.note == "merging":
		if r.gating {
			return "gate"
		}
		return "merging"
	case r.gating:
		return "gate"
	}
	return r.state
}

// tableLines renders the table for a terminal width columns wide: each
// line's visible text has at most width-1 runes.
func (p *View) tableLines(width int, now time.Time) []string {
	limit := max(width-1, 10)
	counts := map[string]int{}
	for _, r := range p.rows {
		counts[r.shownState()]++
	}
	head := fmt.Sprintf("claudopilot  %s  %s", now.Sub(p.start).Round(time.Second), shownCounts(counts))
	lines := []string{cut(head, limit)}
	idW := 0
	for _, r := range p.rows {
		idW = max(idW, utf8.RuneCountInString(r.id))
	}
	idW = min(idW, max(8, limit/4))
	roleW := 0
	for _, r := range p.rows {
		if r.attempt > 0 {
			roleW = max(roleW, len(fmt.Sprintf("%s #%d", r.role, r.attempt)))
		}
	}
	// Narrow terminals drop the attempt and the elapsed time first.
	withRole, withTime := limit >= 64 && roleW > 0, limit >= 48
	for _, r := range p.rows {
		// A long roadmap shows only what is moving.
		if len(p.rows) > 15 && (r.state == string(manifest.Merged) || r.state == string(manifest.Pending)) {
			continue
		}
		st := r.shownState()
		var b strings.Builder
		b.WriteString("  " + pad(cut(r.id, idW), idW) + "  ")
		stateAt := utf8.RuneCountInString(b.String())
		b.WriteString(pad(st, 8))
		if withRole {
			role := ""
			if r.attempt > 0 {
				role = fmt.Sprintf("%s #%d", r.role, r.attempt)
			}
			b.WriteString(" " + pad(cut(role, roleW), roleW))
		}
		if withTime {
			el := ""
			if r.state == string(manifest.Running) && !r.since.IsZero() && !r.stopped {
				el = now.Sub(r.since).Round(time.Second).String()
			}
			b.WriteString(fmt.Sprintf(" %5s", cut(el, 5)))
		}
		line := b.String()
		if room := limit - utf8.RuneCountInString(line) - 2; room > 0 {
			if d := p.detail(r, st, now); d != "" {
				line += "  " + cut(d, room)
			}
		}
		line = cut(strings.TrimRight(line, " "), limit)
		lines = append(lines, colorAt(p.s.Color, line, stateAt, st))
	}
	return lines
}

// detail is what the last column says about a row.
func (p *View) detail(r *row, st string, now time.Time) string {
	switch {
	case !r.until.IsZero() && r.until.After(now):
		return fmt.Sprintf("%s, %s left", r.note, r.until.Sub(now).Round(time.Second))
	case st == "gate" && r.note == "merging":
		return "checking the merge commit"
	case st == "gate":
		return "checking " + string(r.role) + "'s work"
	case len(r.waitFiles) > 0 && (st == "waiting" || strings.HasPrefix(r.note, "wait")):
		return "uncommitted " + strings.Join(r.waitFiles, ", ") + " in the base checkout: commit or stash it"
	case st == "stopped":
		return "interrupted; `claudopilot run` resumes it"
	case st == "merging":
		return "" // the state says it all
	case st == "running" && r.log != "":
		if tail, err := proc.TailFile(r.log, 40); err == nil {
			if d := lastReadable(tail); d != "" {
				return d
			}
		}
	}
	return clean(r.note)
}

// lastReadable is the newest line of an agent's log worth showing: Claude
// Code's stream-json events become their text or the tool they call;
// plain output is shown as it is, without control characters.
func lastReadable(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, "{") {
			if s, ok := streamJSONLine(l); ok {
				if s != "" {
					return clean(s)
				}
				continue
			}
		}
		return clean(l)
	}
	return ""
}

// streamJSONLine renders one line of `claude --output-format stream-json`
// or of `codex exec --json`.
// ok is false when the line is not such an event; s is "" for events not
// worth a line (tool results, bookkeeping).
func streamJSONLine(line string) (s string, ok bool) {
	var ev struct {
		Type    string `json:"type"`
		Subtype string `json:"subtype"`
		Model   string `json:"model"`
		Result  string `json:"result"`
		// Claude: an object with the content; Codex's error: a string.
		Message json.RawMessage `json:"message"`
		// Codex
		Item  *codexItem `json:"item"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(line), &ev) != nil || ev.Type == "" {
		return "", false
	}
	switch ev.Type {
	case "item.started", "item.updated", "item.completed":
		if ev.Item == nil {
			return "", true
		}
		return ev.Item.text(), true
	case "turn.failed":
		if ev.Error != nil {
			return "failed: " + firstLine(ev.Error.Message), true
		}
		return "failed", true
	case "error":
		var msg string
		_ = json.Unmarshal(ev.Message, &msg)
		return "error: " + firstLine(msg), true
	case "system":
		if ev.Subtype == "init" {
			if ev.Model != "" {
				return "started (" + ev.Model + ")", true
			}
			return "started", true
		}
		return "", true
	case "result":
		if r := firstLine(ev.Result); r != "" {
			return "result: " + r, true
		}
		return "result: " + ev.Subtype, true
	case "assistant":
		return assistantLine(ev.Message), true
	}
	return "", true
}

// assistantLine is the last readable part of a Claude assistant message:
// its text, or the tool it uses and on what.
func assistantLine(message json.RawMessage) string {
	var msg struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(message, &msg) != nil {
		return ""
	}
	var items []struct {
		Type  string         `json:"type"`
		Text  string         `json:"text"`
		Name  string         `json:"name"`
		Input map[string]any `json:"input"`
	}
	if json.Unmarshal(msg.Content, &items) != nil {
		return ""
	}
	for i := len(items) - 1; i >= 0; i-- {
		it := items[i]
		switch it.Type {
		case "text":
			if t := firstLine(it.Text); t != "" {
				return t
			}
		case "tool_use":
			for _, k := range []string{"command", "file_path", "path", "pattern", "url", "description", "prompt"} {
				if v, _ := it.Input[k].(string); v != "" {
					return it.Name + ": " + firstLine(v)
				}
			}
			return it.Name
		}
	}
	return ""
}

// codexItem is an item of `codex exec --json` (its kind is "type", or
// "item_type" in early versions).
type codexItem struct {
	Type     string `json:"type"`
	ItemType string `json:"item_type"`
	Text     string `json:"text"`
	Command  string `json:"command"`
	Server   string `json:"server"`
	Tool     string `json:"tool"`
	Query    string `json:"query"`
	Message  string `json:"message"`
	Changes  []struct {
		Path string `json:"path"`
	} `json:"changes"`
}

func (it *codexItem) text() string {
	kind := it.Type
	if kind == "" {
		kind = it.ItemType
	}
	switch kind {
	case "agent_message", "assistant_message", "reasoning":
		return strings.Trim(firstLine(it.Text), "*")
	case "command_execution":
		return "$ " + firstLine(it.Command)
	case "file_change":
		var paths []string
		for _, c := range it.Changes {
			paths = append(paths, c.Path)
		}
		return "edit: " + strings.Join(paths, ", ")
	case "mcp_tool_call":
		return it.Server + "." + it.Tool
	case "web_search":
		return "search: " + firstLine(it.Query)
	case "error":
		return "error: " + firstLine(it.Message)
	}
	return ""
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// clean drops escape sequences and control characters (a \r, a colour
// code) that would move the cursor inside the table.
func clean(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b:
			// Skip an escape sequence: ESC [ … final byte, or ESC x.
			j := i + 1
			if j < len(s) && s[j] == '[' {
				j++
				for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
					j++
				}
			}
			i = min(j+1, len(s))
			continue
		case r == '\t':
			b.WriteByte(' ')
		case unicode.IsControl(r) || r == utf8.RuneError:
		default:
			b.WriteRune(r)
		}
		i += n
	}
	return strings.TrimSpace(b.String())
}

// cut shortens s to at most n runes, marking the cut with "…".
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 1 {
		return string([]rune(s)[:max(n, 0)])
	}
	return string([]rune(s)[:n-1]) + "…"
}

func pad(s string, n int) string {
	if k := utf8.RuneCountInString(s); k < n {
		return s + strings.Repeat(" ", n-k)
	}
	return s
}

// colorAt colours the state word of a rendered line, at rune offset at.
func colorAt(on bool, line string, at int, st string) string {
	rs := []rune(line)
	if !on || at+len(st) > len(rs) {
		return line
	}
	return string(rs[:at]) + ColorOnly(true, string(rs[at:at+len(st)])) + string(rs[at+len(st):])
}

// shownCounts is the header's count per shown state, in a fixed order.
func shownCounts(c map[string]int) string {
	var parts []string
	for _, s := range []string{"merged", "running", "gate", "merging", "waiting", "stopped", "pending", "failed", "blocked"} {
		if c[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[s], s))
		}
	}
	return strings.Join(parts, ", ")
}

// rowsTaken is how many terminal rows lines of these widths take at width.
func rowsTaken(widths []int, width int) int {
	n := 0
	for _, w := range widths {
		n += max(1, (w+width-1)/width)
	}
	return n
}
