package root

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/internal/cli/completion"
)

// TestCompletionMentionsEveryCommand: each shell's script offers every
// visible command, and every flag each command's --help shows.
func TestCompletionMentionsEveryCommand(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			var out bytes.Buffer
			a := &cmdutil.App{S: &cmdutil.Streams{Out: &out, Err: &out}, Env: map[string]string{}, Cwd: t.TempDir(), Commands: Commands}
			if err := completion.NewCmd(nil).Run(context.Background(), a, []string{shell}); err != nil {
				t.Fatal(err)
			}
			script := out.String()
			for _, c := range Commands() {
				if c.Hidden {
					continue
				}
				var want string
				switch shell {
				case "bash":
					want = "    " + c.Name + ") flags="
				case "zsh":
					want = "    '" + c.Name + ":"
				case "fish":
					want = "-a " + c.Name + " -d "
				}
				if !strings.Contains(script, want) {
					t.Errorf("%s script does not offer the command %s (no %q)", shell, c.Name, want)
				}
				if c.Name == "help" {
					continue
				}
				for _, f := range completion.FlagNames(context.Background(), a, c) {
					if !strings.Contains(script, "--"+f) && !strings.Contains(script, "-l "+f) {
						t.Errorf("%s script lacks claudopilot %s --%s", shell, c.Name, f)
					}
				}
			}
			if shell == "bash" {
				if _, err := exec.LookPath("bash"); err != nil {
					t.Skip("no bash")
				}
				file := filepath.Join(t.TempDir(), "c.bash")
				if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				if msg, err := exec.Command("bash", "-n", file).CombinedOutput(); err != nil {
					t.Fatalf("bash -n: %v\n%s", err, msg)
				}
			}
		})
	}
}
