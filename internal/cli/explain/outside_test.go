package explain

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

// explain reads issues ("#N", nodes from outside the manifest) from the
// journal: parked (with the log to read and the labels to move on GitHub,
// the queue's own labels when set), landed, away, stopped mid-way,
// unknown; and a phase waiting on them: a parked issue holds it, a landed
// one does not, a LOOP-CHECKPOINT holds what is below it. No run is going
// on. (retry of an issue without the queue's GitHub settings is
// internal/cli/root's TestRetryIssueWithoutQueueSettings: here it linked
// the engine into explain's test binary, #23.) The script status_outside
// runs the same through the binary under CLAUDOPILOT_SOAK=1.
func TestExplainOutsideNodes(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		// git 2.38+ is a stated requirement (README; .ci/run installs it):
		// without it only this machine is unfit, as for the other git tests.
		t.Skip("no git")
	}
	dir := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "GITHUB_TOKEN" && k != "GH_TOKEN" && k != "GH_REPO" {
			env = append(env, kv)
		}
	}
	env = append(env, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
	files := map[string]string{
		"roadmap/EXECUTION-MANIFEST.md": "# Execution Manifest: outside nodes\n\n**Status:** in-progress\n\n## Phases\n\n" +
			"1. [merged] **p1** — first (deps: none)\n2. [pending] **p2** — after issue 3 (deps: p1, #3)\n" +
			"3. [pending] **p3** — after issue 12 (deps: #12)\n\n<!-- LOOP-CHECKPOINT: look at the issues -->\n\n" +
			"4. [pending] **p4** — below the checkpoint (deps: none)\n",
		"roadmap/p1-first.md": "# first\n", "roadmap/p2-after.md": "# after 3\n",
		"roadmap/p3-after.md": "# after 12\n", "roadmap/p4-below.md": "# below\n",
		".gitignore": "/.claudopilot/\n",
	}
	for rel, text := range files {
		writeFile(t, filepath.Join(dir, rel), text)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-qm", "roadmap"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	writeFile(t, filepath.Join(dir, ".claudopilot/logs/%2312/checks-1.log"), "ci/test failed\n")
	writeFile(t, filepath.Join(dir, ".claudopilot/state/journal.jsonl"), `{"t":"2026-01-01T00:00:00Z","phase":"p1","ev":"merged","commit":"abc"}
{"t":"2026-01-01T00:00:00Z","phase":"#3","ev":"launch","role":"worker","attempt":1}
{"t":"2026-01-01T00:01:00Z","phase":"#3","ev":"done","role":"worker","attempt":1}
{"t":"2026-01-01T00:02:00Z","phase":"#3","ev":"merged","commit":"def"}
{"t":"2026-01-01T00:00:00Z","phase":"#12","ev":"launch","role":"worker","attempt":1}
{"t":"2026-01-01T00:01:00Z","phase":"#12","ev":"fail","role":"worker","attempt":1,"reason":"checks","detail":"ci/test failed"}
{"t":"2026-01-01T00:01:01Z","phase":"#12","ev":"blocked","reason":"checks"}
{"t":"2026-01-01T00:02:00Z","phase":"#5","ev":"launch","role":"worker","attempt":1}
{"t":"2026-01-01T00:02:30Z","phase":"#5","ev":"done","role":"worker","attempt":1}
{"t":"2026-01-01T00:02:40Z","phase":"#5","ev":"away","detail":"pull request #40 handed to a human for review"}
{"t":"2026-01-01T00:03:00Z","phase":"#7","ev":"launch","role":"worker","attempt":1}
{"t":"2026-01-01T00:03:10Z","phase":"#7","ev":"fail","role":"worker","attempt":1,"reason":"gate"}
{"t":"2026-01-01T00:03:11Z","phase":"#7","ev":"launch","role":"supervisor","attempt":1}
`)
	explain := func(id string, more ...string) (string, error) {
		var out bytes.Buffer
		a := &cmdutil.App{S: &cmdutil.Streams{Out: &out, Err: &out}, Cwd: dir, Env: cmdutil.EnvMap(append(env, more...))}
		err := NewCmd(nil).Run(context.Background(), a, []string{id})
		return out.String(), err
	}
	for _, c := range []struct {
		id   string
		env  []string
		want []string
	}{
		{"#12", nil, []string{"#12 is an issue, parked [blocked] after 1 attempt: reason checks (ci/test failed).\n",
			`Read .claudopilot/logs/%2312/checks-1.log, then retry it on GitHub: remove the label "agent-blocked" from issue #12 and add "agent-ready"`}},
		{"#12", []string{"BLOCKED_LABEL=stuck", "READY_LABEL=go"}, []string{`remove the label "stuck" from issue #12 and add "go"`}},
		{"#3", nil, []string{"#3 is an issue the driver landed"}},
		{"#5", nil, []string{"#5 is an issue that left the driver's hands after 1 attempt: pull request #40 handed to a human for review. Its state is on GitHub now"}},
		{"#7", nil, []string{"#7 is an issue the driver was working on (attempt 2) when it stopped"}},
		{"#99", nil, []string{"#99 is an issue, not a phase of roadmap/EXECUTION-MANIFEST.md, and the journal has no record of it"}},
		{"p3", nil, []string{"its dep #12 is an issue: ", "; the journal has it [blocked]"}},
		{"p2", nil, []string{"p2 is [pending] and eligible"}},
		{"p4", nil, []string{"below the LOOP-CHECKPOINT"}},
	} {
		out, err := explain(c.id, c.env...)
		if err != nil {
			t.Errorf("explain %s: %v\n%s", c.id, err, out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("explain %s %v said\n%s\nwant %q", c.id, c.env, out, w)
			}
		}
	}
	if out, err := explain("nope"); err == nil || !strings.Contains(err.Error()+out, `no phase "nope"`) {
		t.Errorf("explain nope: %v\n%s; want no phase \"nope\"", err, out)
	}
}

func writeFile(t *testing.T, p, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
