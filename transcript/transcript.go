package transcript

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// Kind says what an entry is.
type Kind string

const (
	Text     Kind = "text"     // the assistant's words
	Thinking Kind = "thinking" // its reasoning, where the agent prints it
	Tool     Kind = "tool"     // a tool call and, once it came, its result
	Turn     Kind = "turn"     // a model turn began; Figures are what it spent
	Result   Kind = "result"   // the run's end, with its totals
	Error    Kind = "error"    // an error the agent reported
	Note     Kind = "note"     // a session began, a plan, a user message
	Plain    Kind = "plain"    // lines that are no agent event
)

// Entry is one item of a transcript.
type Entry struct {
	Kind Kind   `json:"kind"`
	Text string `json:"text,omitempty"`
	// A tool call: the tool's name, its input in one line, and its result
	// (Output) once it came; Pending until then. Failed: the tool (or, for
	// a Result, the run) reported an error.
	Tool    string `json:"tool,omitempty"`
	Input   string `json:"input,omitempty"`
	Output  string `json:"output,omitempty"`
	Pending bool   `json:"pending,omitempty"`
	Failed  bool   `json:"failed,omitempty"`
	// Number counts turns (Kind Turn), from 1.
	Number  int      `json:"number,omitempty"`
	Figures *Figures `json:"figures,omitempty"`
}

// Figures are what a turn or a run reported spending; nil is unknown,
// never zero.
type Figures struct {
	InputTokens  *int64   `json:"input_tokens,omitempty"`
	OutputTokens *int64   `json:"output_tokens,omitempty"`
	CacheRead    *int64   `json:"cache_read_tokens,omitempty"`
	CacheWrite   *int64   `json:"cache_write_tokens,omitempty"`
	CostUSD      *float64 `json:"cost_usd,omitempty"`
	Turns        *int64   `json:"turns,omitempty"`
	DurationMS   *int64   `json:"duration_ms,omitempty"`
}

// MaxField bounds the text kept of one field (a tool's output, a
// message): a tool can print megabytes, and the raw log keeps them all.
const MaxField = 64 << 10

// MaxLine bounds one line read; a longer one is cut (bufio's limit).
const MaxLine = 16 << 20

// Parser builds a transcript line by line. It is not safe for concurrent
// use.
type Parser struct {
	entries []Entry
	// calls finds a tool entry by the id its result names (Claude's
	// tool_use id, opencode's callID, Codex's item id).
	calls map[string]int
	// turns finds a Claude turn by its message id (one message comes in
	// several lines, one per content block, each with the same usage).
	turns map[string]int
	turn  int // turns so far
	open  int // index of the newest Turn entry, -1 none
}

// NewParser makes an empty parser.
func NewParser() *Parser {
	return &Parser{calls: map[string]int{}, turns: map[string]int{}, open: -1}
}

// Entries are the entries so far; the caller must not change them.
func (p *Parser) Entries() []Entry { return p.entries }

// Feed reads one line of output and returns the indices of the entries it
// added or changed, in order.
func (p *Parser) Feed(line string) []int {
	line = strings.TrimRight(line, "\r\n")
	t := strings.TrimSpace(line)
	if strings.HasPrefix(t, "{") {
		var ev event
		if decode(t, &ev) && ev.Type != "" {
			if touched, ok := p.event(&ev); ok {
				return touched
			}
		}
	}
	return p.plain(line)
}

// event hands an event to its format's reader; ok is false for a type no
// format knows (the line is then kept as it is).
func (p *Parser) event(ev *event) (touched []int, ok bool) {
	switch ev.Type {
	case "system", "assistant", "user", "result":
		return p.claude(ev), true
	case "thread.started", "turn.started", "turn.completed", "turn.failed",
		"item.started", "item.updated", "item.completed":
		return p.codex(ev), true
	case "step_start", "step_finish", "text", "reasoning", "tool_use":
		if ev.Part == nil {
			return nil, false // another tool's event of that name
		}
		return p.opencode(ev), true
	case "error":
		return p.add(Entry{Kind: Error, Text: errorText(ev)}), true
	case "stream_event", "session.created", "token_count":
		return nil, true // partial deltas and bookkeeping: raw has them
	}
	return nil, false
}

// decode reads a JSON object into ev. A field of an unexpected type is
// left empty rather than failing the whole event.
func decode(line string, ev *event) bool {
	err := json.Unmarshal([]byte(line), ev)
	var te *json.UnmarshalTypeError
	return err == nil || errors.As(err, &te)
}

// plain keeps a line that is no event, joined to the plain lines before it.
func (p *Parser) plain(line string) []int {
	if n := len(p.entries); n > 0 && p.entries[n-1].Kind == Plain {
		e := &p.entries[n-1]
		e.Text = capped(e.Text + "\n" + line)
		return []int{n - 1}
	}
	return p.add(Entry{Kind: Plain, Text: capped(line)})
}

func (p *Parser) add(e Entry) []int {
	p.entries = append(p.entries, e)
	return []int{len(p.entries) - 1}
}

// newTurn opens a Turn entry.
func (p *Parser) newTurn(f *Figures) []int {
	p.turn++
	touched := p.add(Entry{Kind: Turn, Number: p.turn, Figures: f})
	p.open = touched[0]
	return touched
}

// Read parses a whole log. A line longer than MaxLine is cut there (its
// event unreadable, its text kept in part).
func Read(r io.Reader) ([]Entry, error) {
	p := NewParser()
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) <= MaxLine {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(line) > 0 {
			p.Feed(string(line))
		}
		line = line[:0]
		if errors.Is(err, io.EOF) {
			return p.Entries(), nil
		}
		if err != nil {
			return p.Entries(), err
		}
	}
}

// capped cuts s to MaxField bytes on a rune boundary, saying how much
// was left out.
func capped(s string) string {
	if len(s) <= MaxField {
		return s
	}
	cut := MaxField
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "\n… (" + itoa(int64(len(s)-cut)) + " more bytes in the raw log)"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
