package scanners

import (
	"bytes"
	"context"
	"github.com/claudopilot/claudopilot/internal/gittest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/issues/ghfake"
)

// `scanners` lists the built-in and committed scanners; off and on switch
// one (the list shows it); an unknown name or a stray --dry-run is
// misuse (64) and changes nothing.
func TestListAndSwitch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	cmd := exec.Command("git", "init", "-q", "-b", "main", dir)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	if err := os.MkdirAll(filepath.Join(dir, "claudopilot", "scanners"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "claudopilot", "scanners", "i18n.md"), []byte("Find untranslated strings.\n"), 0o644)
	run := func(args ...string) (string, int) {
		var out bytes.Buffer
		a := &cmdutil.App{S: &cmdutil.Streams{Out: &out, Err: &out}, Cwd: dir, Env: cmdutil.EnvMap(env)}
		err := NewCmd(nil).Run(context.Background(), a, args)
		return out.String(), cmdutil.ExitCode(err, nil)
	}
	out, code := run()
	if code != 0 || !strings.Contains(out, "i18n") || !strings.Contains(out, "claudopilot/scanners/i18n.md") || !strings.Contains(out, "security") || strings.Contains(out, " off ") {
		t.Fatalf("list (exit %d):\n%s", code, out)
	}
	if out, code := run("off", "security"); code != 0 || !strings.Contains(out, "scanner security off") {
		t.Fatalf("off: %d %s", code, out)
	}
	if out, _ := run(); !strings.Contains(out, "security") || !strings.Contains(out, "off") {
		t.Errorf("the list does not show security off:\n%s", out)
	}
	for _, args := range [][]string{{"off", "nope"}, {"run", "nope"}, {"--dry-run"}, {"run"}} {
		if out, code := run(args...); code != cmdutil.ExitUsage {
			t.Errorf("%q: exit %d, want %d:\n%s", args, code, cmdutil.ExitUsage, out)
		}
	}
}

// `scanners run NAME --dry-run` runs the scanner with the queue's settings
// (SCANNER_CMD, the token, the repository's default branch) through the
// engine's composition and prints what it would file, deduplicated
// against the open issues, filing nothing; without --dry-run it files.
// Under bubblewrap the scanner cannot write its checkout.
func TestRunDryThenFile(t *testing.T) {
	t.Parallel()
	t.Run("off", func(t *testing.T) { t.Parallel(); runDryThenFile(t, "off") })
	t.Run("bwrap", func(t *testing.T) {
		t.Parallel()
		if _, err := exec.LookPath("bwrap"); err != nil {
			t.Skip("bubblewrap is not installed")
		}
		runDryThenFile(t, "bwrap")
	})
}

func runDryThenFile(t *testing.T, sandbox string) {
	dir := t.TempDir()
	env := gittest.Env(dir)
	origin, work := gittest.Origin(t, dir, env)
	fake := ghfake.New(ghfake.Options{Owner: "acme", Repo: "widgets", Origin: origin, GitEnv: env})
	t.Cleanup(fake.Close)
	fake.AddUser("bot", "write")
	fake.AddToken("tok-1", "bot")
	fake.NewIssue("bot", "Already open", "x", nil, "")
	scan := filepath.Join(dir, "scan.sh")
	os.WriteFile(scan, []byte(`#!/bin/sh
cat >/dev/null
test -f README.md
if [ "$SANDBOX_PROBE" = bwrap ] && touch probe 2>/dev/null; then exit 3; fi
echo '{"title":"New thing","body":"b","fingerprint":"n"}'
echo '{"title":"already open","body":"b","fingerprint":"o"}'
`), 0o755)
	full := append(env, "SANDBOX_PROBE="+sandbox, "GITHUB_TOKEN=tok-1", "GITHUB_API_URL="+fake.URL(), "GH_REPO=acme/widgets", "SCANNER_CMD="+scan, "SANDBOX="+sandbox)
	run := func(args ...string) (string, int) {
		var out bytes.Buffer
		a := &cmdutil.App{S: &cmdutil.Streams{Out: &out, Err: &out}, Cwd: work, Env: cmdutil.EnvMap(full)}
		err := NewCmd(nil).Run(context.Background(), a, args)
		if err != nil {
			out.WriteString("error: " + err.Error())
		}
		return out.String(), cmdutil.ExitCode(err, nil)
	}
	out, code := run("run", "todo", "--dry-run")
	if code != 0 || !strings.Contains(out, "would file: New thing  [n]") || !strings.Contains(out, "not filed: already open: an open issue has this title: #1") {
		t.Fatalf("dry run (exit %d):\n%s", code, out)
	}
	if _, ok := fake.Issue(2); ok {
		t.Fatal("a dry run filed an issue")
	}
	out, code = run("run", "todo")
	if is, ok := fake.Issue(2); code != 0 || !ok || is.Title != "New thing" || !strings.Contains(out, "filed #2: New thing") {
		t.Fatalf("run (exit %d): %+v\n%s", code, is, out)
	}
	if out, _ := run(); !strings.Contains(out, "todo") || !strings.Contains(out, "\t1") && !strings.Contains(out, " 1\n") {
		t.Errorf("list after the run:\n%s", out)
	}
	again, code := run("run", "todo")
	if code != 0 || !strings.Contains(again, "not filed: New thing: filed before as #2 (the scanner ledger)") {
		t.Errorf("run again (exit %d):\n%s", code, again)
	}
	// Messages say "scanner", never "scan": nobody mistakes them for the
	// secret scan (the ledger's file name, scans.jsonl, aside).
	help, _ := run("--help")
	word := regexp.MustCompile(`(?i)\bscan(s|ned|ning)?\b`)
	for _, o := range []string{out, again, help} {
		if m := word.FindString(strings.ReplaceAll(o, "scans.jsonl", "")); m != "" {
			t.Errorf("%q in:\n%s", m, o)
		}
	}
}
