package transcript

import "encoding/json"

// opencode's `opencode run --format json`: each line is {type, timestamp,
// sessionID, part}. step_start and step_finish bracket a model step, the
// finish with its tokens and cost; text and reasoning parts are emitted
// when complete; a tool_use part carries the call and its state (input,
// output or error) once the tool finished.

type ocPart struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Tool   string `json:"tool"`
	CallID string `json:"callID"`
	State  *struct {
		Status string          `json:"status"`
		Input  json.RawMessage `json:"input"`
		Output string          `json:"output"`
		Title  string          `json:"title"`
		Error  string          `json:"error"`
	} `json:"state"`
	Tokens *struct {
		Input     *int64 `json:"input"`
		Output    *int64 `json:"output"`
		Reasoning *int64 `json:"reasoning"`
		Cache     *struct {
			Read  *int64 `json:"read"`
			Write *int64 `json:"write"`
		} `json:"cache"`
	} `json:"tokens"`
	Cost *float64 `json:"cost"`
}

func (p *Parser) opencode(ev *event) []int {
	part := ev.Part
	switch ev.Type {
	case "step_start":
		return p.newTurn(nil)
	case "step_finish":
		if p.open < 0 {
			p.newTurn(nil)
		}
		p.entries[p.open].Figures = part.figures()
		return []int{p.open}
	case "text":
		if part.Text == "" {
			return nil
		}
		return p.add(Entry{Kind: Text, Text: capped(part.Text)})
	case "reasoning":
		if part.Text == "" {
			return nil
		}
		return p.add(Entry{Kind: Thinking, Text: capped(part.Text)})
	}
	return p.ocTool(part)
}

func (p *Parser) ocTool(part *ocPart) []int {
	e := Entry{Kind: Tool, Tool: part.Tool, Pending: true}
	if s := part.State; s != nil {
		e.Input = summarise(s.Input)
		if e.Input == "" {
			e.Input = oneLine(s.Title)
		}
		switch s.Status {
		case "completed":
			e.Output, e.Pending = capped(s.Output), false
		case "error":
			e.Output, e.Failed, e.Pending = capped(s.Error), true, false
		}
	}
	if i, ok := p.calls[part.CallID]; ok && part.CallID != "" {
		p.entries[i] = e
		return []int{i}
	}
	touched := p.add(e)
	if part.CallID != "" {
		p.calls[part.CallID] = touched[0]
	}
	return touched
}

// figures are a finished step's tokens (reasoning counted as output, as
// the provider bills it) and cost.
func (part *ocPart) figures() *Figures {
	f := &Figures{CostUSD: cost(part.Cost)}
	if t := part.Tokens; t != nil {
		f.InputTokens, f.OutputTokens = t.Input, t.Output
		if t.Reasoning != nil && *t.Reasoning > 0 {
			out := *t.Reasoning
			if t.Output != nil {
				out += *t.Output
			}
			f.OutputTokens = &out
		}
		if t.Cache != nil {
			f.CacheRead, f.CacheWrite = t.Cache.Read, t.Cache.Write
		}
	}
	return f
}
