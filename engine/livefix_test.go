package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/scheduler"
)

// The rebuild of a live manifest a power cut emptied: the committed bytes
// with the journal's last states, every other byte as committed; nothing
// when the committed manifest does not parse or the journal names none
// of its phases (the driver never wrote this file).
func TestRebuildManifest(t *testing.T) {
	t.Parallel()
	committed := []byte("# M\n\n1. [pending] **a** — A (deps: none)\n2. [pending] **b** — B (deps: none)\n3. [merged] **c** — C (deps: none)\n")
	states := map[string]scheduler.Journaled{
		"a": {State: manifest.Merged, At: time.Now()}, "b": {State: manifest.Failed}, "c": {State: manifest.Merged}, "gone": {State: manifest.Merged},
	}
	out, put := rebuildManifest(committed, states, map[string]bool{"a": true})
	want := strings.Replace(strings.Replace(string(committed), "[pending] **a**", "[merged] **a**", 1), "[pending] **b**", "[failed] **b**", 1)
	if string(out) != want || strings.Join(put, ", ") != "a [merged], b [failed]" {
		t.Errorf("rebuilt %q, put %v; want %q, a and b", out, put, want)
	}
	if out, _ := rebuildManifest(committed, states, map[string]bool{"other": true}); out != nil {
		t.Errorf("a journal of other phases rebuilt %q", out)
	}
	if out, _ := rebuildManifest([]byte("not a manifest"), states, map[string]bool{"a": true}); out != nil {
		t.Errorf("an unparsable committed manifest rebuilt %q", out)
	}
	for b, want := range map[string]string{"": "empty", " \n": "empty", "# M\x00\x00": "cut short (NUL bytes)", "# M\n\n1. [pend": "cut short"} {
		if got := cutKind([]byte(b)); got != want {
			t.Errorf("cutKind(%q) = %q, want %q", b, got, want)
		}
	}
}
