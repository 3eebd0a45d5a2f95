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
)

// TestMisuseExits64: flag and argument misuse of every command exits 64
// with a message naming the problem (a bad value from the environment
// names it as its source), and changes nothing in the repository; --help
// and help exit 0. In process: the script plan_flags ran these as 20
// driver starts, now under CLAUDOPILOT_SOAK=1 only.
func TestMisuseExits64(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		// git 2.38+ is a stated requirement (README; .ci/run installs it):
		// without it only this machine is unfit, as for the other git tests.
		t.Skip("no git")
	}
	dir := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x", "SANDBOX=off"}
	for rel, text := range map[string]string{
		"roadmap/EXECUTION-MANIFEST.md": "1. [pending] **phase-01** — one (deps: none)\n",
		"roadmap/phase-01.md":           "# phase-01\n",
	} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-qm", "init")
	head := git("rev-parse", "HEAD")
	t.Chdir(dir)
	agent := filepath.Join(dir, "..", "ok.sh")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := []string{"run", "roadmap", "--base", "main", "--agent", agent}
	for _, c := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"plan", "roadmap", "--format", "yaml"}, "", `"yaml"`},
		{[]string{"plan", "--bogus", "roadmap"}, "", "unknown flag: --bogus"},
		{[]string{"plan", "roadmap", "roadmap"}, "", "at most one"},
		{append(run, "--bogus"), "", "unknown flag: --bogus"},
		{[]string{"run", "roadmap", "roadmap", "--base", "main", "--agent", agent}, "", "at most one"},
		{append(run, "--max-parallel", "many"), "", "MAX_PARALLEL"},
		{append(run, "--max-parallel", "0"), "", "MAX_PARALLEL"},
		{append(run, "--keep-going=maybe"), "", "keep-going"},
		{append(run, "--poll-seconds", "soon"), "", "POLL_SECONDS"},
		{[]string{"run", "roadmap", "--base", "main", "--agent", ""}, "", "AGENT_CMD"},
		{run, "MAX_PARALLEL=lots", `MAX_PARALLEL="lots" from the environment`},
		{[]string{"demo", "extra"}, "", "no arguments"},
		{[]string{"demo", "--bogus"}, "", "unknown flag: --bogus"},
		{nil, "", "no command"},
		{[]string{"frob"}, "", `unknown command "frob"`},
		{[]string{"help", "frob"}, "", "frob"},
	} {
		var out bytes.Buffer
		e := env
		if c.env != "" {
			e = append(append([]string{}, env...), c.env)
		}
		err := Run(context.Background(), c.args, &cmdutil.Streams{In: strings.NewReader(""), Out: &out, Err: &out}, e)
		if code := cmdutil.ExitCode(err, nil); code != cmdutil.ExitUsage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("claudopilot %q (%s): exit %d, %v; want 64 naming %q\n%s", c.args, c.env, code, err, c.want, out.String())
		}
	}
	for _, c := range [][]string{{"run", "--help"}, {"help", "plan"}, {"help", "exit-codes"}, {"--version"}} {
		var out bytes.Buffer
		err := Run(context.Background(), c, &cmdutil.Streams{In: strings.NewReader(""), Out: &out, Err: &out}, env)
		if code := cmdutil.ExitCode(err, nil); code != 0 || out.Len() == 0 {
			t.Errorf("claudopilot %q: exit %d (%v), want 0 and output\n%s", c, code, err, out.String())
		}
	}
	if st := git("status", "--porcelain", "--ignored"); st != "" || git("rev-parse", "HEAD") != head {
		t.Errorf("misuse changed the repository: status %q", st)
	}
	if _, err := os.Stat(filepath.Join(dir, ".claudopilot")); err == nil {
		t.Error("misuse made .claudopilot")
	}
}
