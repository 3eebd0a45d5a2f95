package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/gittest"
	"github.com/claudopilot/claudopilot/settings"
)

// The helpers of the Go end-to-end tests (crash, kill and queue tests),
// which drive the test binary as the claudopilot command.

// SelfAs makes this test binary callable as name: Main (testscript.Main)
// runs the registered command when argv[0] has that base name.
func SelfAs(t *testing.T, name string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.Symlink(exe, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// Env is the environment of a driver run by a Go test: the test's own
// without git's or claudopilot's variables and knobs, with home as $HOME,
// a fixed git identity, no git configuration (and no automatic
// maintenance, gittest.NoAutoMaintenance), and trace as $TRACE.
func Env(home, trace string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, knob := settings.Lookup(k); strings.HasPrefix(k, "GIT_") || strings.HasPrefix(k, "CLAUDOPILOT_") || knob {
			continue
		}
		env = append(env, kv)
	}
	return append(append(env,
		"HOME="+home, "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1", "SANDBOX=off", // unless a test asks for it
		"GIT_AUTHOR_NAME=Crash Test", "GIT_AUTHOR_EMAIL=crash@example.com",
		"GIT_COMMITTER_NAME=Crash Test", "GIT_COMMITTER_EMAIL=crash@example.com",
		"TRACE="+trace, "NO_COLOR=1",
	), gittest.NoAutoMaintenance()...)
}

// Git runs git in dir with env and returns its output; it fails the test
// when git fails.
func Git(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// WriteFile writes body to p (executable: the tests write agents and
// gates this way), making its folder first.
func WriteFile(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}
