package ledger

import (
	"strings"
	"testing"
)

const claudeLog = `claudopilot note, not JSON
{"type":"system","subtype":"init","session_id":"sess-1","tools":[]}
{"type":"assistant","message":{"content":[{"type":"text","text":"working"}]},"session_id":"sess-1"}
{"type":"result","subtype":"success","is_error":false,"duration_ms":12345,"num_turns":7,"result":"done","session_id":"sess-1","total_cost_usd":0.4211,"usage":{"input_tokens":1200,"cache_creation_input_tokens":300,"cache_read_input_tokens":9000,"output_tokens":800}}
`

const codexLog = `{"type":"thread.started","thread_id":"th_abc"}
{"type":"turn.started"}
{"type":"item.completed","item":{"type":"agent_message","text":"hi"}}
{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":400,"output_tokens":50}}
{"type":"turn.started"}
{"type":"turn.completed","usage":{"input_tokens":500,"cached_input_tokens":100,"output_tokens":25}}
`

func TestParseClaude(t *testing.T) {
	u, _ := Parse(strings.NewReader(claudeLog))
	if c, ok := u.Cost(); !ok || c != 0.4211 {
		t.Errorf("cost %v %v", c, ok)
	}
	if *u.InputTokens != 1200 || *u.OutputTokens != 800 || *u.CacheCreation != 300 || *u.CacheRead != 9000 || *u.Turns != 7 || *u.DurationMS != 12345 || u.SessionID != "sess-1" {
		t.Errorf("usage %+v", u)
	}
}

func TestParseCodex(t *testing.T) {
	u, _ := Parse(strings.NewReader(codexLog))
	if _, ok := u.Cost(); ok {
		t.Errorf("codex reports no cost, got one")
	}
	if CostText(u) != "unknown" {
		t.Errorf("cost text %q", CostText(u))
	}
	if *u.InputTokens != 1500 || *u.OutputTokens != 75 || *u.CacheRead != 500 || *u.Turns != 2 || u.SessionID != "th_abc" {
		t.Errorf("usage %+v", u)
	}
}

func TestParseNothingIsUnknown(t *testing.T) {
	for _, in := range []string{"", "plain text\n", `{"type":"result"}` + "\n", "{not json\n"} {
		u, _ := Parse(strings.NewReader(in))
		if _, ok := u.Cost(); ok || u.InputTokens != nil {
			t.Errorf("%q: %+v, want unknown", in, u)
		}
	}
}

// Results add up to the cent: float sums of many small costs are rounded
// only when shown.
func TestAddToTheCent(t *testing.T) {
	var total Usage
	one := Usage{}
	c := 0.01
	one.CostUSD = &c
	for range 100 {
		total = Add(total, one)
	}
	if CostText(total) != "$1.00" {
		t.Errorf("100 × $0.01 = %s", CostText(total))
	}
	// Unknown plus known is the known part; unknown plus unknown stays unknown.
	if _, ok := Add(Usage{}, Usage{}).Cost(); ok {
		t.Error("unknown + unknown is known")
	}
	if got := Add(Usage{}, one); *got.CostUSD != 0.01 {
		t.Errorf("got %v", *got.CostUSD)
	}
	// Add does not alias its inputs.
	a := Add(one, one)
	*a.CostUSD = 5
	if *one.CostUSD != 0.01 {
		t.Error("Add aliased its input")
	}
}

func TestLongLinesAreSkippedNotFatal(t *testing.T) {
	long := `{"type":"assistant","text":"` + strings.Repeat("x", 1<<20) + `"}` + "\n"
	u, _ := Parse(strings.NewReader(long + claudeLog))
	if _, ok := u.Cost(); !ok {
		t.Error("the result after a 1 MiB line was not read")
	}
}

// A cost the agent reports negative, not finite or absurd is unreadable:
// skipped with a note, never subtracted (#22 §5: an agent printing -1000
// let a run spend past RUN_MAX_COST_USD, its summary "cost $-997.60").
func TestUnreadableCostIsSkipped(t *testing.T) {
	good := `{"type":"result","total_cost_usd":2.40,"session_id":"s"}` + "\n"
	for _, bad := range []string{"-1000", "-0.01", "1e999", "1000.01", "1e308"} {
		log := good + `{"type":"result","total_cost_usd":` + bad + `,"num_turns":3}` + "\n"
		u, notes := Parse(strings.NewReader(log))
		if c, ok := u.Cost(); !ok || c != 2.40 {
			t.Errorf("%s: cost %v %v, want 2.40 (the bad figure skipped)", bad, c, ok)
		}
		if u.Turns == nil || *u.Turns != 3 {
			t.Errorf("%s: the rest of the event was lost: %+v", bad, u)
		}
		if len(notes) != 1 || !strings.Contains(notes[0], "unreadable cost skipped: total_cost_usd") {
			t.Errorf("%s: notes %q", bad, notes)
		}
	}
	if _, notes := Parse(strings.NewReader(`{"type":"result","total_cost_usd":1000}` + "\n")); len(notes) != 0 {
		t.Errorf("$1000 is readable: %q", notes)
	}
	// A journal written before the check may hold a negative cost: sums
	// leave it out.
	neg, pos := -1000.0, 2.5
	if c, _ := Add(Usage{CostUSD: &pos}, Usage{CostUSD: &neg}).Cost(); c != 2.5 {
		t.Errorf("Add subtracted a negative cost: %v", c)
	}
}

// Tokens count every token once: Claude's four figures, Codex's input
// (which holds its cached input) and output; sessions add up.
func TestTokensAndSessions(t *testing.T) {
	c, _ := Parse(strings.NewReader(claudeLog))
	if n, ok := c.TokenCount(); !ok || n != 1200+300+9000+800 {
		t.Errorf("claude tokens %d %v", n, ok)
	}
	x, _ := Parse(strings.NewReader(codexLog))
	if n, ok := x.TokenCount(); !ok || n != 1500+75 {
		t.Errorf("codex tokens %d %v", n, ok)
	}
	c.Sessions, x.Sessions = 1, 2
	sum := Add(c, x)
	if n, _ := sum.TokenCount(); n != 11300+1575 || sum.Sessions != 3 {
		t.Errorf("sum: %d tokens, %d sessions", n, sum.Sessions)
	}
	// A record of an older driver (no Tokens) still counts.
	in, out := int64(10), int64(5)
	old := Usage{InputTokens: &in, OutputTokens: &out}
	if n, _ := Add(old, x).TokenCount(); n != 15+1575 {
		t.Errorf("old+new %d", n)
	}
	if n, _ := Add(x, old).TokenCount(); n != 15+1575 {
		t.Errorf("new+old %d", n)
	}
	if _, ok := (Usage{}).TokenCount(); ok {
		t.Error("nothing reported is unknown, not 0")
	}
}
