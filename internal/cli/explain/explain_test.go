package explain

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/state"
)

// explain's "no free slot" comes from the loop's lane rule over what the
// run journaled: the lanes and their slots, and the agents running on
// each. It used to compare the [running] count with the sum of slots (or
// a re-defaulted 3), so a phase whose own lane was full read "eligible".
func TestExplainNoFreeSlot(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	claude := `{"id":"claude","cmd":"claude -p","supervisor_cmd":"claude -p","slots":1}`
	codex := `{"id":"codex","cmd":"codex exec","supervisor_cmd":"codex exec","slots":2}`
	for _, c := range []struct {
		name, lanes, lane, want string
	}{
		{"lanes: its own lane is full", "[" + claude + "," + codex + "]", "claude",
			"no free slot on the lanes it may run on: lane claude is full (1 of its 1 slots taken)"},
		{"lanes: room on codex", "[" + claude + "," + codex + "]", "",
			"it is eligible and will start at the next scheduling step"},
		{"no LANES: MAX_PARALLEL", `[{"cmd":"agent","supervisor_cmd":"agent","slots":1}]`, "",
			"no free slot: 1 of MAX_PARALLEL=1 agents are running"},
	} {
		out := explainLive(t, c.lanes, c.lane)
		if !strings.Contains(out, "  - "+c.want) {
			t.Errorf("%s: explain b said\n%s\nwant %q", c.name, out, c.want)
		}
	}
}

// explainLive explains phase b of a live run (this process holds the
// lock) that journaled lanes and has phase a running on the first lane.
func explainLive(t *testing.T, lanes, lane string) string {
	t.Helper()
	dir := t.TempDir()
	env := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ann := ""
	if lane != "" {
		ann = " (lane: " + lane + ")"
	}
	write("roadmap/EXECUTION-MANIFEST.md", "1. [running] **a** — a (lane: claude)\n2. [pending] **b** — b"+ann+"\n")
	write("roadmap/a.md", "# a\n")
	write("roadmap/b.md", "# b\n")
	write(".gitignore", "/.claudopilot/\n")
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-qm", "roadmap"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	first := "claude"
	if !strings.Contains(lanes, `"id"`) {
		first = ""
	}
	now := time.Now().UTC().Format(time.RFC3339)
	write(".claudopilot/state/journal.jsonl", fmt.Sprintf(`{"t":%q,"ev":"run","rules":{"lanes":%s}}
{"t":%q,"phase":"a","ev":"launch","role":"worker","attempt":1,"lane":%q}
`, now, lanes, now, first))
	host, _ := os.Hostname()
	lock, _ := json.Marshal(state.LockInfo{PID: os.Getpid(), Host: host, Time: time.Now()})
	write(".git/"+state.LockFile, string(lock))
	var out bytes.Buffer
	a := &cmdutil.App{S: &cmdutil.Streams{Out: &out, Err: &out}, Cwd: dir, Env: cmdutil.EnvMap(env)}
	if err := NewCmd(nil).Run(context.Background(), a, []string{"b"}); err != nil {
		t.Fatalf("explain b: %v\n%s", err, out.String())
	}
	return out.String()
}
