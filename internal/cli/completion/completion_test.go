package completion

import "testing"

func TestParseFlagUsages(t *testing.T) {
	help := `Usage: claudopilot x [flags]

About. Flags: in prose do not count.
      --not-a-flag   (prose)

Flags:
      --format format             output format: text, json (default "text")
  -f, --follow[=true|false]       keep printing
      --max-parallel string       agents running at once [MAX_PARALLEL] (default "3")
      --keep-going[=true|false]   park failed phases

Example:
  claudopilot x --format json
Usage: claudopilot x [flags]

Flags:
      --format format             output format: text, json (default "text")
`
	got := parseFlagUsages(help)
	want := []flagInfo{
		{name: "format", arg: "format", usage: `output format: text, json (default "text")`},
		{name: "follow", short: "f", usage: "keep printing"},
		{name: "max-parallel", arg: "string", usage: `agents running at once [MAX_PARALLEL] (default "3")`},
		{name: "keep-going", usage: "park failed phases"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d flags %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("flag %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}
