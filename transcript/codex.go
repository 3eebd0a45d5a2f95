package transcript

import (
	"encoding/json"
	"strings"
)

// Codex's `codex exec --json`: thread.started, turn.started and
// turn.completed (with the turn's usage), and items started, updated and
// completed by id: agent messages, reasoning, command executions, file
// changes, MCP tool calls, web searches, to-do lists, errors. An item's
// kind is "type" (or "item_type" in versions before 0.44).

type codexItem struct {
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	ItemType string          `json:"item_type"`
	Text     string          `json:"text"`
	Command  string          `json:"command"`
	Output   string          `json:"aggregated_output"`
	ExitCode *int            `json:"exit_code"`
	Status   string          `json:"status"`
	Server   string          `json:"server"`
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"arguments"`
	Result   json.RawMessage `json:"result"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
	Query   string `json:"query"`
	Message string `json:"message"`
	Changes []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
	Items []struct {
		Text      string `json:"text"`
		Completed bool   `json:"completed"`
	} `json:"items"`
}

func (p *Parser) codex(ev *event) []int {
	switch ev.Type {
	case "thread.started":
		text := "session started"
		if ev.ThreadID != "" {
			text += " · thread " + ev.ThreadID
		}
		return p.add(Entry{Kind: Note, Text: text})
	case "turn.started":
		return p.newTurn(nil)
	case "turn.completed":
		if p.open < 0 {
			p.newTurn(nil)
		}
		p.entries[p.open].Figures = ev.Usage.figures()
		return []int{p.open}
	case "turn.failed":
		return p.add(Entry{Kind: Error, Text: errorText(ev)})
	}
	if ev.Item == nil {
		return nil
	}
	e, ok := ev.Item.entry()
	if !ok {
		return nil
	}
	if i, seen := p.calls[ev.Item.ID]; seen && ev.Item.ID != "" {
		p.entries[i] = e // started, updated, completed: the newest says most
		return []int{i}
	}
	touched := p.add(e)
	if ev.Item.ID != "" {
		p.calls[ev.Item.ID] = touched[0]
	}
	return touched
}

// entry is the item as an entry; ok is false for a kind not shown.
func (it *codexItem) entry() (Entry, bool) {
	kind := it.Type
	if kind == "" {
		kind = it.ItemType
	}
	pending := it.Status == "in_progress"
	failed := it.Status == "failed" || it.ExitCode != nil && *it.ExitCode != 0
	switch kind {
	case "agent_message", "assistant_message":
		return Entry{Kind: Text, Text: capped(it.Text)}, true
	case "reasoning":
		return Entry{Kind: Thinking, Text: capped(it.Text)}, true
	case "command_execution":
		return Entry{Kind: Tool, Tool: "shell", Input: oneLine(it.Command), Output: capped(it.Output), Pending: pending, Failed: failed}, true
	case "file_change":
		var paths []string
		for _, c := range it.Changes {
			paths = append(paths, strings.TrimSpace(c.Kind+" "+c.Path))
		}
		return Entry{Kind: Tool, Tool: "edit", Input: oneLine(strings.Join(paths, ", ")), Pending: pending, Failed: failed}, true
	case "mcp_tool_call":
		e := Entry{Kind: Tool, Tool: it.Server + "." + it.Tool, Input: summarise(it.Args), Output: capped(mcpResult(it.Result)), Pending: pending, Failed: failed}
		if it.Error != nil && it.Error.Message != "" {
			e.Output, e.Failed = capped(it.Error.Message), true
		}
		return e, true
	case "web_search":
		return Entry{Kind: Tool, Tool: "web_search", Input: oneLine(it.Query), Pending: pending}, true
	case "todo_list":
		var b strings.Builder
		for _, t := range it.Items {
			mark := "[ ] "
			if t.Completed {
				mark = "[x] "
			}
			b.WriteString(mark + t.Text + "\n")
		}
		return Entry{Kind: Note, Text: capped("plan:\n" + strings.TrimRight(b.String(), "\n"))}, true
	case "error":
		return Entry{Kind: Error, Text: capped(it.Message)}, true
	}
	return Entry{}, false
}

// mcpResult is an MCP call's result: its content blocks' text.
func mcpResult(raw json.RawMessage) string {
	var r struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &r) == nil && len(r.Content) > 0 {
		return blockText(r.Content)
	}
	return blockText(raw)
}
