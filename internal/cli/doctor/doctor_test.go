package doctor

import (
	"bytes"
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
