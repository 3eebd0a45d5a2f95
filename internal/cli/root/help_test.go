package root

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
)

// TestEveryCommandHelp: each visible command's --help succeeds, prints
// its usage line once and an example (the loop that the help_version
// script ran as 14 processes of the real binary; #23: in process it costs
// no driver start).
func TestEveryCommandHelp(t *testing.T) {
	usage := regexp.MustCompile(`(?m)^Usage: claudopilot `)
	example := regexp.MustCompile(`(?m)^Example`)
	seen := 0
	for _, c := range Commands() {
		if c.Hidden {
			continue
		}
		seen++
		t.Run(c.Name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			s := &cmdutil.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}
			err := Run(context.Background(), []string{c.Name, "--help"}, s, nil)
			if code := cmdutil.ExitCode(err, nil); code != 0 { // --help's "help shown" exits 0
				t.Fatalf("claudopilot %s --help exits %d (%v)\n%s", c.Name, code, err, errOut.String())
			}
			if n := len(usage.FindAllString(out.String(), -1)); n != 1 {
				t.Errorf("claudopilot %s --help: %d usage lines, want 1:\n%s", c.Name, n, out.String())
			}
			if !example.MatchString(out.String()) {
				t.Errorf("claudopilot %s --help: no example:\n%s", c.Name, out.String())
			}
		})
	}
	// The script named these; a command that went hidden or away is news.
	for _, name := range []string{"init", "plan", "run", "queue", "status", "logs", "explain", "retry", "doctor", "clean", "demo", "completion", "version", "help"} {
		found := false
		for _, c := range Commands() {
			found = found || c.Name == name && !c.Hidden
		}
		if !found {
			t.Errorf("command %s is not a visible command", name)
		}
	}
	if seen < 14 {
		t.Errorf("%d visible commands, want at least 14", seen)
	}
}
