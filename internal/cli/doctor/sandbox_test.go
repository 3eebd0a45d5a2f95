package doctor

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
)

// doctor's sandbox lines (issues 13 and 21), as run decides (wire.Sandbox):
// off, it says whether bubblewrap works here and recommends it; SANDBOX=
// bwrap that cannot work is a blocking problem; SANDBOX=auto there a
// warning; the changed defaults of SANDBOX and SANDBOX_NET are announced
// until set; SANDBOX_NET's default without slirp4netns warns, set it
// fails. Real bwrap where it works, a failing fake where the point is that
// it fails. (The scripts sandbox_doctor, sandbox_auto and sandbox_net run
// doctor itself under CLAUDOPILOT_SOAK=1.)
func TestDoctorSandboxLines(t *testing.T) {
	_, bwrapErr := exec.LookPath("bwrap")
	_, slirpErr := exec.LookPath("slirp4netns")
	type line struct{ level, msg string }
	cases := []struct {
		name       string
		fake       string // the program that fails here
		needsBwrap bool
		env        map[string]string
		want       []line
		not        []string
	}{
		{name: "off, bwrap works", needsBwrap: true, env: map[string]string{"SANDBOX": "off"},
			want: []line{{"ok", "sandbox: off; bubblewrap works here: SANDBOX=auto or bwrap"}}, not: []string{"SANDBOX now defaults", "SANDBOX_NET now defaults"}},
		{name: "bwrap", needsBwrap: true, env: map[string]string{"SANDBOX": "bwrap", "SANDBOX_NET": "1"},
			want: []line{{"ok", "sandbox: bwrap (agents can write only their worktree and branch)"}}, not: []string{"SANDBOX now defaults", "SANDBOX_NET now defaults"}},
		{name: "the default, bwrap works", needsBwrap: true, env: map[string]string{},
			want: []line{{"ok", "sandbox: SANDBOX now defaults to auto (it was off)"}, {"ok", "sandbox: auto (from the default): bubblewrap works here"}}},
		{name: "bwrap fails", fake: "bwrap", env: map[string]string{"SANDBOX": "bwrap"},
			want: []line{{"FAIL", "sandbox: SANDBOX=bwrap (from the environment) cannot work here: "}, {"FAIL", "No permissions"}}},
		{name: "off, bwrap fails", fake: "bwrap", env: map[string]string{"SANDBOX": "off"},
			want: []line{{"ok", "sandbox: off, and bubblewrap does not work here"}}},
		{name: "the default, bwrap fails", fake: "bwrap", env: map[string]string{},
			want: []line{{"ok", "sandbox: SANDBOX now defaults to auto"}, {"warn", "sandbox: SANDBOX=auto (from the default), but bubblewrap does not work here"}}},
		{name: "auto set, bwrap fails", fake: "bwrap", env: map[string]string{"SANDBOX": "auto"},
			want: []line{{"warn", "sandbox: SANDBOX=auto (from the environment), but bubblewrap does not work here"}}, not: []string{"SANDBOX now defaults", "SANDBOX_NET now defaults"}},
		{name: "SANDBOX_NET's default, slirp4netns fails", fake: "slirp4netns", needsBwrap: true, env: map[string]string{"SANDBOX": "bwrap"},
			want: []line{{"ok", "sandbox: SANDBOX_NET now defaults to outside (it was 1)"}, {"warn", "sandbox: SANDBOX_NET=outside needs slirp4netns"}}},
		{name: "SANDBOX_NET set, slirp4netns fails", fake: "slirp4netns", needsBwrap: true, env: map[string]string{"SANDBOX": "bwrap", "SANDBOX_NET": "outside"},
			want: []line{{"FAIL", "sandbox: SANDBOX_NET=outside (from the environment) cannot work here"}}, not: []string{"SANDBOX now defaults", "SANDBOX_NET now defaults"}},
	}
	if slirpErr == nil {
		cases = append(cases, struct {
			name       string
			fake       string
			needsBwrap bool
			env        map[string]string
			want       []line
			not        []string
		}{name: "SANDBOX_NET's default, slirp4netns works", needsBwrap: true, env: map[string]string{"SANDBOX": "bwrap"},
			want: []line{{"ok", "sandbox: SANDBOX_NET now defaults to outside (it was 1)"}, {"ok", "sandbox: network outside (slirp4netns)"}}})
	}
	path := os.Getenv("PATH")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.needsBwrap && bwrapErr != nil {
				t.Skip("bubblewrap (bwrap) is not installed")
			}
			p := path
			if c.fake != "" {
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, c.fake), []byte("#!/bin/sh\necho '"+c.fake+": No permissions to create new namespace' >&2\nexit 1\n"), 0o755); err != nil {
					t.Fatal(err)
				}
				p = dir + string(os.PathListSeparator) + path
			}
			t.Setenv("PATH", p)
			var out bytes.Buffer
			d := &doctorState{a: &cmdutil.App{S: &cmdutil.Streams{Out: &out}, Env: c.env}, dir: t.TempDir()}
			d.checkSettings(nil)
			d.checks = nil // the settings' own lines are TestDoctorListsEachSettingsSource's
			d.checkSandbox(context.Background())
			d.print()
			got := out.String()
			for _, w := range c.want {
				if !hasLine(got, w.level, w.msg) {
					t.Errorf("doctor said\n%s\nwant a %s line with %q", got, w.level, w.msg)
				}
			}
			for _, n := range c.not {
				if strings.Contains(got, n) {
					t.Errorf("doctor said\n%s\nwant no %q", got, n)
				}
			}
		})
	}
}

// hasLine says whether doctor's output has a line of level (ok, warn,
// FAIL) that contains msg.
func hasLine(out, level, msg string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, level+" ") && strings.Contains(l, msg) {
			return true
		}
	}
	return false
}
