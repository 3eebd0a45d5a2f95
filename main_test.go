package main

// Package main is a shell over root.Main: this test proves only that the
// binary's exit code is the command's. The end-to-end tests are in e2e/...
// (internal/e2e is their harness), one test binary per feature so that
// each has go test's timeout to itself and they run on every core (#23).

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "claudopilot" { // run as the binary by TestExitCodeIsTheCommands
		main()
	}
	os.Exit(m.Run())
}

// TestExitCodeIsTheCommands: main exits with root.Main's result: 0 for a
// command that succeeds, 64 for misuse (the rest is the e2e packages').
func TestExitCodeIsTheCommands(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "claudopilot")
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		arg  string
		want int
	}{{"version", 0}, {"frobnicate", 64}} {
		cmd := exec.Command(bin, c.arg)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		got := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			got = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("claudopilot %s exited %d, want %d\n%s", c.arg, got, c.want, out)
		}
	}
}
