package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		d := &doctorState{a: &app{s: &Streams{Out: &out, ErrIsTTY: c.tty, Color: c.color}}, checks: checks}
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

func TestCommandWord(t *testing.T) {
	for _, c := range []struct {
		cmd, want string
		ok        bool
	}{
		{DefaultAgent, "claude", true},
		{"FOO=1 BAR='a b' codex exec --full-auto", "codex", true},
		{"exec ./bin/agent.sh -x", "./bin/agent.sh", true},
		{`'my agent' -p`, "my agent", true},
		{`"$HOME/bin/agent"`, "", false},
		{"$AGENT --x", "", false},
		{"go test ./... && make lint", "go", true},
		{"npm ci; npm run build", "npm", true},
		{"( cd web && npm test )", "", false},
		{"X=1", "", false},
		{"'unclosed", "", false},
	} {
		got, ok := commandWord(c.cmd)
		if got != c.want || ok != c.ok {
			t.Errorf("commandWord(%q) = %q, %v; want %q, %v", c.cmd, got, ok, c.want, c.ok)
		}
	}
}

func TestLookPathIn(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"tool": 0o755, "data": 0o644} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	path := strings.Join([]string{filepath.Join(dir, "nothing"), bin}, string(os.PathListSeparator))
	if p, ok := lookPathIn("tool", path, ""); !ok || p != filepath.Join(bin, "tool") {
		t.Errorf("tool: %q, %v", p, ok)
	}
	if _, ok := lookPathIn("data", path, ""); ok {
		t.Error("a file without an executable bit was found")
	}
	if _, ok := lookPathIn("bin", path, dir); ok {
		t.Error("a folder was found")
	}
	if p, ok := lookPathIn("./bin/tool", "", dir); !ok || p != filepath.Join(dir, "bin", "tool") {
		t.Errorf("./bin/tool from the top: %q, %v", p, ok)
	}
}
