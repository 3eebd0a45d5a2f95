package transcript

import (
	"encoding/json"
	"strings"
)

// Claude Code's stream-json: a "system" init event, "assistant" messages
// whose content blocks are text, thinking and tool_use (each message one
// model turn, its usage on every line of it), "user" messages carrying
// tool_result blocks, and a final "result" with the run's totals.

type claudeMessage struct {
	ID      string          `json:"id"`
	Content json.RawMessage `json:"content"` // blocks, or a string
	Usage   *usage          `json:"usage"`
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (p *Parser) claude(ev *event) []int {
	switch ev.Type {
	case "system":
		if ev.Subtype != "init" {
			return nil // hooks, retries, compaction: raw has them
		}
		text := "session started"
		if ev.Model != "" {
			text += " · " + ev.Model
		}
		return p.add(Entry{Kind: Note, Text: text})
	case "result":
		return p.claudeResult(ev)
	}
	var msg claudeMessage
	if json.Unmarshal(ev.Message, &msg) != nil {
		return nil
	}
	var blocks []claudeBlock
	if json.Unmarshal(msg.Content, &blocks) != nil {
		var s string
		if json.Unmarshal(msg.Content, &s) == nil && s != "" {
			return p.add(Entry{Kind: Note, Text: capped(s)})
		}
		return nil
	}
	var touched []int
	if ev.Type == "assistant" {
		touched = p.claudeTurn(msg)
	}
	for _, b := range blocks {
		touched = append(touched, p.claudeBlock(b)...)
	}
	return touched
}

// claudeTurn opens a turn for a new message id, or updates its figures
// (a message streamed in several lines reports its usage on each).
func (p *Parser) claudeTurn(msg claudeMessage) []int {
	if i, ok := p.turns[msg.ID]; ok && msg.ID != "" {
		if f := msg.Usage.figures(); f != nil {
			p.entries[i].Figures = f
		}
		return []int{i}
	}
	touched := p.newTurn(msg.Usage.figures())
	if msg.ID != "" {
		p.turns[msg.ID] = touched[0]
	}
	return touched
}

func (p *Parser) claudeBlock(b claudeBlock) []int {
	switch b.Type {
	case "text":
		if b.Text == "" {
			return nil
		}
		return p.add(Entry{Kind: Text, Text: capped(b.Text)})
	case "thinking":
		if b.Thinking == "" {
			return nil
		}
		return p.add(Entry{Kind: Thinking, Text: capped(b.Thinking)})
	case "tool_use":
		touched := p.add(Entry{Kind: Tool, Tool: b.Name, Input: summarise(b.Input), Pending: true})
		if b.ID != "" {
			p.calls[b.ID] = touched[0]
		}
		return touched
	case "tool_result":
		return p.result(b.ToolUseID, blockText(b.Content), b.IsError)
	}
	return nil
}

// result gives the call named id its output; a result whose call is not
// in the log (a capped log keeps its newest half) gets an entry of its
// own, with no tool name.
func (p *Parser) result(id, out string, failed bool) []int {
	i, ok := p.calls[id]
	if !ok || id == "" {
		if strings.TrimSpace(out) == "" {
			return nil
		}
		return p.add(Entry{Kind: Tool, Output: capped(out), Failed: failed})
	}
	e := &p.entries[i]
	e.Output, e.Failed, e.Pending = capped(out), failed, false
	return []int{i}
}

func (p *Parser) claudeResult(ev *event) []int {
	var text string
	_ = json.Unmarshal(ev.Result, &text)
	f := ev.Usage.figures()
	if f == nil {
		f = &Figures{}
	}
	f.CostUSD, f.Turns, f.DurationMS = cost(ev.TotalCost), ev.NumTurns, ev.DurationMS
	label := ev.Subtype
	if label == "" {
		label = "done"
	}
	return p.add(Entry{Kind: Result, Input: label, Text: capped(text), Failed: ev.IsError, Figures: f})
}
