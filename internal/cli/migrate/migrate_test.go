package migrate

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
)

// TestMigrateCommand: --dry-run writes nothing; migrate writes
// claudopilot.config once, keeps the old file, and never overwrites.
// The Claudopilot file is written here in the form of jopnick/claudopilot
// v0.4.0's templates/claudopilot.config.sh.
func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	c := exec.Command("git", "init", "-q", "-b", "main")
	c.Dir, c.Env = top, []string{"GIT_CONFIG_GLOBAL=" + os.DevNull, "GIT_CONFIG_NOSYSTEM=1", "PATH=" + os.Getenv("PATH")}
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	old := "export GATE_CMD=\"make test\"\nexport RENDER_STREAM=1\n"
	if err := os.WriteFile(filepath.Join(top, "claudopilot.config.sh"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	a := &cmdutil.App{S: &cmdutil.Streams{Out: &out, Err: &out}, Env: map[string]string{"PATH": os.Getenv("PATH")}, Cwd: top}
	run := func(args ...string) error { out.Reset(); return NewCmd(nil).Run(context.Background(), a, args) }
	cfg := filepath.Join(top, "claudopilot.config")
	if err := run("--dry-run"); err != nil || !strings.Contains(out.String(), "GATE_CMD=make test") || !strings.Contains(out.String(), "RENDER_STREAM is Claudopilot's") {
		t.Fatalf("dry run: %v\n%s", err, out.String())
	}
	if _, err := os.Stat(cfg); err == nil {
		t.Fatal("--dry-run wrote claudopilot.config")
	}
	if err := run(); err != nil || !strings.Contains(out.String(), "wrote claudopilot.config") {
		t.Fatalf("migrate: %v\n%s", err, out.String())
	}
	if b, _ := os.ReadFile(cfg); !strings.Contains(string(b), "\nGATE_CMD=make test\n") {
		t.Errorf("claudopilot.config:\n%s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(top, "claudopilot.config.sh")); string(b) != old {
		t.Error("the old file changed")
	}
	if err := run(); err == nil || cmdutil.ExitCode(err, nil) != cmdutil.ExitFatal {
		t.Errorf("a second migrate: %v (want exit 1)", err)
	}
}
