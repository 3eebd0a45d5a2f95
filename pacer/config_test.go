package pacer

import (
	"strings"
	"testing"
)

func getter(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseDefaults(t *testing.T) {
	ls, err := Parse("claude codex", getter(map[string]string{
		"AGENT_CMD": "claude -p", "LANE_CODEX_CMD": "codex exec", "LANE_CODEX_MODE": "window",
		"DEFAULT_CONCURRENCY": "2", "LANE_CLAUDE_FALLBACK": "codex", "HARD_STOP_PCT": "90",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 {
		t.Fatalf("%d lanes", len(ls))
	}
	c, x := ls[0], ls[1]
	if c.ID != "claude" || c.Cmd != "claude -p" || c.SupervisorCmd != "claude -p" || c.Mode != Always || c.Concurrency != 2 || c.Fallback != "codex" || c.HardStopPct != 90 {
		t.Errorf("claude lane: %+v", c)
	}
	if x.Cmd != "codex exec" || x.Mode != WindowPaced || x.MaxConcurrency != 6 || x.CatchupHours != 4 || x.FiveHourThrottleCap != 1 {
		t.Errorf("codex lane: %+v", x)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		lanes string
		env   map[string]string
		want  string
	}{
		{"a..b", nil, `lane id "a..b"`},
		{"a a", map[string]string{"AGENT_CMD": "x"}, "named twice"},
		{"a", nil, "LANE_A_CMD: lane a has no command"},
		{"a", map[string]string{"AGENT_CMD": "x", "LANE_A_MODE": "sometimes"}, `LANE_A_MODE="sometimes"`},
		{"a", map[string]string{"AGENT_CMD": "x", "MAX_CONCURRENCY": "-1"}, "LANE_A_MAX_CONCURRENCY"},
		{"a", map[string]string{"AGENT_CMD": "x", "LANE_A_CATCHUP_HOURS": "soon"}, "LANE_A_CATCHUP_HOURS"},
		{"a", map[string]string{"AGENT_CMD": "x", "LANE_A_FALLBACK": "b"}, "no such lane"},
		{"a", map[string]string{"AGENT_CMD": "x", "LANE_A_FALLBACK": "a"}, "itself"},
		{"a", map[string]string{"AGENT_CMD": "x", "MIN_CONCURRENCY": "7"}, "above"},
		{"a", map[string]string{"AGENT_CMD": "x", "LANE_A_ATTACH": "maybe"}, `LANE_A_ATTACH="maybe"`},
	}
	for _, tc := range tests {
		_, err := Parse(tc.lanes, getter(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q, %v) = %v, want an error with %q", tc.lanes, tc.env, err, tc.want)
		}
	}
}

// LANE_<id>_ATTACH runs one lane's agents on a terminal (ATTACH, every
// agent's, is the runner's; it is no lane default, so the settings table
// holds it once).
func TestParseAttach(t *testing.T) {
	ls, err := Parse("claude codex", getter(map[string]string{"AGENT_CMD": "x", "LANE_CODEX_ATTACH": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	if ls[0].Attach || !ls[1].Attach {
		t.Errorf("attach claude %v codex %v, want codex only", ls[0].Attach, ls[1].Attach)
	}
}

func TestEnvNameOfDashedID(t *testing.T) {
	if got := EnvName("claude-max", "CMD"); got != "LANE_CLAUDE_MAX_CMD" {
		t.Errorf("got %s", got)
	}
}

func TestParseUsage(t *testing.T) {
	tests := []struct {
		in   string
		want Usage
	}{
		{"42 3600\n", Usage{OK: true, PctUsed: 42, SecsToReset: 3600}},
		{"42.5 3600 80 1200", Usage{OK: true, PctUsed: 42.5, SecsToReset: 3600, HasFiveHour: true, FiveHourPct: 80, FiveHourSecs: 1200}},
		{"", Usage{}},
		{"42", Usage{}},
		{"42 soon", Usage{}},
		{"42 3600 80", Usage{}},
		{"-1 3600", Usage{}},
	}
	for _, tc := range tests {
		if got := ParseUsage(tc.in); got != tc.want {
			t.Errorf("ParseUsage(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestParseProbe(t *testing.T) {
	if c, l, m, ok := ParseProbe("8 1.5 16000\n"); !ok || c != 8 || l != 1.5 || m != 16000 {
		t.Errorf("got %v %v %v %v", c, l, m, ok)
	}
	for _, bad := range []string{"", "8 1.5", "8 x 100", "8 1 2 3"} {
		if _, _, _, ok := ParseProbe(bad); ok {
			t.Errorf("ParseProbe(%q) ok", bad)
		}
	}
}
