package doctor

import (
	"bytes"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
)

func TestDoctorMarkers(t *testing.T) {
	checks := []doctorCheck{
		{level: doctorOK, msg: "git 2.45.0"},
		{level: doctorWarn, msg: "gate: none", fix: "set one"},
		{level: doctorFail, msg: "manifest: 1 problem", fix: "fix it", detail: []string{"m.md:3: bad"}},
	}
	for _, c := range []struct {
		tty, color bool
		want       string
	}{
		{false, false, "ok   git 2.45.0\nwarn gate: none; fix: set one\nFAIL manifest: 1 problem; fix: fix it\n     m.md:3: bad\n"},
		{true, false, "✓ git 2.45.0\n! gate: none; fix: set one\n✗ manifest: 1 problem; fix: fix it\n  m.md:3: bad\n"},
		{true, true, "\x1b[32m✓\x1b[0m git 2.45.0\n\x1b[33m!\x1b[0m gate: none; fix: set one\n\x1b[31m✗\x1b[0m manifest: 1 problem; fix: fix it\n  m.md:3: bad\n"},
	} {
		var out bytes.Buffer
		d := &doctorState{a: &cmdutil.App{S: &cmdutil.Streams{Out: &out, ErrIsTTY: c.tty, Color: c.color}}, checks: checks}
		fails, warns := d.print()
		if fails != 1 || warns != 1 {
			t.Errorf("tty %v: %d fails, %d warns; want 1, 1", c.tty, fails, warns)
		}
		if out.String() != c.want {
			t.Errorf("tty %v color %v:\n%q\nwant\n%q", c.tty, c.color, out.String(), c.want)
		}
	}
	if got := (&DoctorError{Problems: 1}).Error(); got != "doctor: 1 problem found" {
		t.Errorf("DoctorError = %q", got)
	}
	if got := (&DoctorError{Problems: 3}).Error(); got != "doctor: 3 problems found" {
		t.Errorf("DoctorError = %q", got)
	}
}

// doctor lists every setting that is not at its default with where it
// came from, under its settings line (#23: the one settings model records
// each value's source, and doctor prints them); defaults are not listed.
func TestDoctorListsEachSettingsSource(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	d := &doctorState{a: &cmdutil.App{S: &cmdutil.Streams{Out: &out}, Env: map[string]string{"MAX_PARALLEL": "5", "KEEP_GOING": "1"}}, dir: t.TempDir()}
	d.checkSettings(nil)
	d.print()
	for _, want := range []string{"ok   settings: valid (no claudopilot.config)\n", "     MAX_PARALLEL=5 (from the environment)\n", "     KEEP_GOING=1 (from the environment)\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("doctor said\n%s\nwant %q", out.String(), want)
		}
	}
	if strings.Contains(out.String(), "GATE_CMD") || strings.Contains(out.String(), "from the default") {
		t.Errorf("doctor listed a default:\n%s", out.String())
	}
}
