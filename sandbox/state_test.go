package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The copy of the CLI state leaves out the bulky and session folders,
// binds the user's protected files over the copy's, takes back only a
// login the user has (a plain file holding JSON), and carries the sessions
// to the next attempt of the phase.
func TestStateCopy(t *testing.T) {
	home := t.TempDir()
	write := func(rel, c string) {
		t.Helper()
		p := filepath.Join(home, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".claude/settings.json", "{}")
	write(".claude/.credentials.json", `{"t":1}`)
	write(".claude/projects/big/x.jsonl", "the user's own session")
	write(".claude/todos/t.json", "[]")
	write(".codex/config.toml", "")
	os.Symlink("/etc/hostname", filepath.Join(home, ".claude", "CLAUDE.md"))
	scratch, keep := t.TempDir(), t.TempDir()
	state := HomeState(home)
	copies, err := prepareState(scratch, keep, state)
	if err != nil {
		t.Fatal(err)
	}
	if len(copies) != 2 {
		t.Fatalf("copies of %v, want .claude and .codex", copies)
	}
	c := copies[0].copy
	for rel, want := range map[string]bool{"settings.json": true, ".credentials.json": true, "projects": false, "todos": false} {
		if _, err := os.Lstat(filepath.Join(c, rel)); (err == nil) != want {
			t.Errorf("the copy has %s: %v, want %v", rel, err == nil, want)
		}
	}
	if l, err := os.Readlink(filepath.Join(c, "CLAUDE.md")); err != nil || l != "/etc/hostname" {
		t.Errorf("a link in the state is not copied as the link: %q, %v", l, err)
	}
	args := strings.Join(stateArgs(copies), " ")
	for _, want := range []string{"--bind " + c + " " + filepath.Join(home, ".claude"),
		"--ro-bind " + filepath.Join(home, ".claude", "settings.json") + " " + filepath.Join(home, ".claude", "settings.json"),
		"--ro-bind " + filepath.Join(home, ".claude", "CLAUDE.md"), "--ro-bind " + filepath.Join(home, ".codex", "config.toml")} {
		if !strings.Contains(args, want) {
			t.Errorf("the binds lack %q:\n%s", want, args)
		}
	}
	// The process: a refreshed login, a session; the codex login it
	// makes (the user has none) and garbage are not taken.
	os.WriteFile(filepath.Join(c, ".credentials.json"), []byte(`{"t":2}`), 0o600)
	os.MkdirAll(filepath.Join(c, "projects", "wt"), 0o755)
	os.WriteFile(filepath.Join(c, "projects", "wt", "s.jsonl"), []byte("attempt 1"), 0o644)
	os.WriteFile(filepath.Join(copies[1].copy, "auth.json"), []byte(`{"evil":1}`), 0o600)
	notes, err := leaveState(copies, keep)
	if err != nil || len(notes) != 1 || !strings.Contains(notes[0], ".claude/.credentials.json") {
		t.Fatalf("leaveState: %q, %v", notes, err)
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".claude", ".credentials.json")); string(b) != `{"t":2}` {
		t.Errorf("the login is %s", b)
	}
	if _, err := os.Stat(filepath.Join(home, ".codex", "auth.json")); err == nil {
		t.Error("a login the user did not have was made")
	}
	// Not JSON: left behind.
	os.WriteFile(filepath.Join(c, ".credentials.json"), []byte("#!/bin/sh"), 0o600)
	if notes, _ := leaveState(copies, ""); len(notes) != 0 {
		t.Errorf("garbage taken back: %q", notes)
	}
	// The next attempt of the phase finds its session, not the user's.
	next, err := prepareState(t.TempDir(), keep, state)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	filepath.WalkDir(filepath.Join(next[0].copy, "projects"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			got = append(got, strings.TrimPrefix(p, next[0].copy+"/"))
		}
		return nil
	})
	if !slices.Equal(got, []string{"projects/wt/s.jsonl"}) {
		t.Errorf("the next attempt's sessions: %q", got)
	}
}
