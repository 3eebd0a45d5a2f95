package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
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
	out, put := rebuildManifest(committed, states, map[string]bool{"a": true}, time.Time{})
	want := strings.Replace(strings.Replace(string(committed), "[pending] **a**", "[merged] **a**", 1), "[pending] **b**", "[failed] **b**", 1)
	if string(out) != want || strings.Join(put, ", ") != "a [merged], b [failed]" {
		t.Errorf("rebuilt %q, put %v; want %q, a and b", out, put, want)
	}
	if out, _ := rebuildManifest(committed, states, map[string]bool{"other": true}, time.Time{}); out != nil {
		t.Errorf("a journal of other phases rebuilt %q", out)
	}
	if out, _ := rebuildManifest([]byte("not a manifest"), states, map[string]bool{"a": true}, time.Time{}); out != nil {
		t.Errorf("an unparsable committed manifest rebuilt %q", out)
	}
	for b, want := range map[string]string{"": "empty", " \n": "empty", "# M\x00\x00": "cut short (NUL bytes)", "# M\n\n1. [pend": "cut short"} {
		if got := cutKind([]byte(b)); got != want {
			t.Errorf("cutKind(%q) = %q, want %q", b, got, want)
		}
	}
}

// The source of a rebuild: the backup of the person's last save when it
// parses and holds every line of HEAD's (state words and Status aside),
// with the journal's states recorded before the save put back; HEAD's
// when the backup lacks one of its lines (a commit since), is missing or
// does not parse, and then the line names the backup.
func TestChooseSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	committed := []byte("# M\n\n**Status:** complete\n\n1. [merged] **a** — A (deps: none)\n2. [pending] **b** — B (deps: none)\n")
	saved := "# M\n\n**Status:** in-progress\n\n1. [pending] **a** — A (deps: none)\n2. [running] **b** — B (deps: none)\n3. [pending] **c** — C, never committed (deps: none)\n"
	at := time.Now().Add(-time.Hour)
	recs := []state.Record{
		{Time: at.Add(-time.Minute), Phase: "a", Event: "merged"},
		{Time: at.Add(time.Minute), Phase: "b", Event: "failed"},
	}
	backup := filepath.Join(dir, "manifest-last-save.md")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(backup, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(backup, at, at); err != nil {
			t.Fatal(err)
		}
	}

	write(saved)
	s := chooseSource(committed, backup, recs)
	// a's [merged] came before the save (the save's [pending] is a
	// person's reset: it stands); b's [failed] after it.
	want := strings.Replace(saved, "[running] **b**", "[failed] **b**", 1)
	if string(s.rebuilt) != want || !strings.HasPrefix(s.from, "the backup of your last save") || s.note != "" {
		t.Errorf("a backup holding HEAD's lines: rebuilt %q from %q (%q), want %q from the backup", s.rebuilt, s.from, s.note, want)
	}

	write(strings.Replace(saved, "— B", "— B renamed", 1)) // HEAD's b line is not in it
	s = chooseSource(committed, backup, recs)
	if !strings.HasPrefix(s.from, "HEAD's") || !strings.Contains(s.note, backup+", lacks lines HEAD's has") || !strings.Contains(string(s.rebuilt), "[failed] **b** — B (deps") {
		t.Errorf("a backup older than HEAD's: rebuilt %q from %q (%q), want HEAD's naming the backup", s.rebuilt, s.from, s.note)
	}
	for _, body := range []string{"", "not a manifest **"} {
		write(body)
		if s := chooseSource(committed, backup, recs); !strings.HasPrefix(s.from, "HEAD's") {
			t.Errorf("a backup %q: rebuilt from %q, want HEAD's", body, s.from)
		}
	}
	write(saved)
	link := filepath.Join(dir, "link.md")
	if err := os.Symlink(backup, link); err != nil {
		t.Fatal(err)
	}
	if s := chooseSource(committed, link, recs); !strings.HasPrefix(s.from, "HEAD's") {
		t.Errorf("a backup that is a symlink: rebuilt from %q, want HEAD's (a link is not followed)", s.from)
	}
	if s := chooseSource(committed, backup+".gone", recs); !strings.HasPrefix(s.from, "HEAD's") || s.note != "; lines never committed are not in it" {
		t.Errorf("no backup: rebuilt from %q (%q), want HEAD's", s.from, s.note)
	}
	write(saved)
	if s := chooseSource(nil, backup, recs); !strings.HasPrefix(s.from, "the backup") {
		t.Errorf("no manifest in HEAD: rebuilt from %q, want the backup", s.from)
	}
}
