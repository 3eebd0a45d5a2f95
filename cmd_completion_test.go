package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompletionMentionsEveryCommand: each shell's script offers every
// visible command, and every flag each command's --help shows.
func TestCompletionMentionsEveryCommand(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			var out bytes.Buffer
			a := &app{s: &Streams{Out: &out, Err: &out}, env: map[string]string{}, cwd: t.TempDir()}
			if err := cmdCompletion(context.Background(), a, []string{shell}); err != nil {
				t.Fatal(err)
			}
			script := out.String()
			for _, c := range commands() {
				if c.hidden {
					continue
				}
				var want string
				switch shell {
				case "bash":
					want = "    " + c.name + ") flags="
				case "zsh":
					want = "    '" + c.name + ":"
				case "fish":
					want = "-a " + c.name + " -d "
				}
				if !strings.Contains(script, want) {
					t.Errorf("%s script does not offer the command %s (no %q)", shell, c.name, want)
				}
				if c.name == "help" {
					continue
				}
				for _, f := range commandFlags(context.Background(), a, c) {
					if !strings.Contains(script, "--"+f.name) && !strings.Contains(script, "-l "+f.name) {
						t.Errorf("%s script lacks claudopilot %s --%s", shell, c.name, f.name)
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

func TestParseFlagUsages(t *testing.T) {
	help := `Usage: claudopilot x [flags]

About. Flags: in prose do not count.
      --not-a-flag   (prose)

Flags:
      --format format             output format: text, json (default "text")
  -f, --follow[=true|false]       keep printing
      --max-parallel string       agents running at once [MAX_PARALLEL] (default "3")
      --keep-going[=true|false]   park failed phases

Example:
  claudopilot x --format json
Usage: claudopilot x [flags]

Flags:
      --format format             output format: text, json (default "text")
`
	got := parseFlagUsages(help)
	want := []flagInfo{
		{name: "format", arg: "format", usage: `output format: text, json (default "text")`},
		{name: "follow", short: "f", usage: "keep printing"},
		{name: "max-parallel", arg: "string", usage: `agents running at once [MAX_PARALLEL] (default "3")`},
		{name: "keep-going", usage: "park failed phases"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d flags %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("flag %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}
