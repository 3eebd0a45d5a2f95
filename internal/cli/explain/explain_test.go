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
	ann := ""
	if lane != "" {
		ann = " (lane: " + lane + ")"
	}
	first := "claude"
	if !strings.Contains(lanes, `"id"`) {
		first = ""
	}
	return explainJournal(t, "1. [running] **a** — a (lane: claude)\n2. [pending] **b** — b"+ann+"\n",
		`{"ev":"run","rules":{"lanes":`+lanes+`}}`,
		fmt.Sprintf(`{"phase":"a","ev":"launch","role":"worker","attempt":1,"lane":%q}`, first))
}

// explainJournal explains phase b of a live run (this process holds the
// lock) whose manifest is manifest and whose journal holds recs (each a
// record without its time: now is added).
func explainJournal(t *testing.T, manifest string, recs ...string) string {
	t.Helper()
	return explainID(t, "b", manifest, recs...)
}

// explainID is explainJournal for phase id.
func explainID(t *testing.T, id, manifest string, recs ...string) string {
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
	write("roadmap/EXECUTION-MANIFEST.md", manifest)
	for _, id := range []string{"a", "b", "c"} {
		write("roadmap/"+id+".md", "# "+id+"\n")
	}
	write(".gitignore", "/.claudopilot/\n")
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-qm", "roadmap"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	now := time.Now().UTC().Format(time.RFC3339)
	var jn strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&jn, "{\"t\":%q,%s\n", now, strings.TrimPrefix(r, "{"))
	}
	write(".claudopilot/state/journal.jsonl", jn.String())
	host, _ := os.Hostname()
	lock, _ := json.Marshal(state.LockInfo{PID: os.Getpid(), Host: host, Time: time.Now()})
	write(".git/"+state.LockFile, string(lock))
	var out bytes.Buffer
	a := &cmdutil.App{S: &cmdutil.Streams{Out: &out, Err: &out}, Cwd: dir, Env: cmdutil.EnvMap(env)}
	if err := NewCmd(nil).Run(context.Background(), a, []string{id}); err != nil {
		t.Fatalf("explain %s: %v\n%s", id, err, out.String())
	}
	return out.String()
}

// A phase retried in a live run keeps the lane its last attempt ran on,
// in the loop (laneFor) and so in explain (scheduler.HomeLane over the
// journal): b, bound to no lane, ran on codex and was retried; with codex
// full, it waits for codex although claude has room. explain used to
// read the journal's retry as "no lane" and say b would start.
func TestExplainRetriedPhaseKeepsItsLane(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	out := explainJournal(t, "1. [pending] **b** — b\n2. [running] **c** — c (lane: codex)\n",
		`{"ev":"run","rules":{"lanes":[{"id":"claude","cmd":"claude -p","slots":1},{"id":"codex","cmd":"codex exec","slots":1}]}}`,
		`{"phase":"b","ev":"launch","role":"worker","attempt":1,"lane":"codex"}`,
		`{"phase":"b","ev":"fail","role":"worker","attempt":1,"reason":"gate"}`,
		`{"phase":"b","ev":"blocked","reason":"gate"}`,
		`{"phase":"b","ev":"retry"}`,
		`{"phase":"c","ev":"launch","role":"worker","attempt":1,"lane":"codex"}`)
	want := "  - no free slot on the lanes it may run on: lane codex is full (1 of its 1 slots taken)"
	if !strings.Contains(out, want) {
		t.Errorf("explain b said\n%s\nwant %q", out, want)
	}
}

// explain reads the lanes as the live loop has them, from what the loop
// journals: the slots the pacer (or `claudopilot lanes`) set since the run
// started ("lanes" records), and the slots lent to side runs (scanners,
// "side-start"/"side-end"). It used to read the slots of the run's start
// and count only the phases' agents.
func TestExplainReadsLiveLaneSlots(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	run := `{"ev":"run","rules":{"lanes":[{"id":"claude","cmd":"claude -p","slots":1},{"id":"codex","cmd":"codex exec","slots":1}]}}`
	aOnClaude := `{"phase":"a","ev":"launch","role":"worker","attempt":1,"lane":"claude"}`
	for _, c := range []struct {
		name, lane string
		recs       []string
		want       string
	}{
		{"the pacer gave claude a second slot", "claude",
			[]string{run, aOnClaude, `{"ev":"lanes","detail":"concurrency claude 1→2","slots":{"claude":2,"codex":1}}`},
			"it is eligible and will start at the next scheduling step"},
		{"the pacer took codex's slot", "codex",
			[]string{run, aOnClaude, `{"ev":"lanes","detail":"concurrency codex 1→0","slots":{"claude":1,"codex":0}}`},
			"no free slot on the lanes it may run on: lane codex has no slot now (switched off, or paced to 0: `claudopilot lanes`)"},
		{"a scanner holds codex's slot", "codex",
			[]string{run, aOnClaude, `{"ev":"side-start","lane":"codex","title":"scanner bugs"}`},
			"no free slot on the lanes it may run on: lane codex is full (1 of its 1 slots taken)"},
		{"the scanner gave it back", "codex",
			[]string{run, aOnClaude, `{"ev":"side-start","lane":"codex","title":"scanner bugs"}`, `{"ev":"side-end","lane":"codex","title":"scanner bugs"}`},
			"it is eligible and will start at the next scheduling step"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out := explainJournal(t, "1. [running] **a** — a (lane: claude)\n2. [pending] **b** — b (lane: "+c.lane+")\n", c.recs...)
			if !strings.Contains(out, "  - "+c.want) {
				t.Errorf("explain b said\n%s\nwant %q", out, c.want)
			}
		})
	}
}

// A [running] phase between attempts (a passing error's retry, a repair,
// a poke, a usage limit) is relaunched by the loop's lane rule from the
// lane it ran on: explain says where its next attempt starts, or which
// lane holds it. It used to say "a is running" with no agent running.
func TestExplainBetweenAttempts(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	run := `{"ev":"run","rules":{"lanes":[{"id":"claude","cmd":"claude -p","slots":1},{"id":"codex","cmd":"codex exec","slots":1}]}}`
	aOnCodex := `{"phase":"a","ev":"launch","role":"worker","attempt":1,"lane":"codex"}`
	for _, c := range []struct {
		name string
		recs []string
		want string
	}{
		{"codex full", []string{run, aOnCodex, `{"phase":"a","ev":"transient","role":"worker","attempt":1}`,
			`{"phase":"c","ev":"launch","role":"worker","attempt":1,"lane":"codex"}`},
			"Its next attempt waits: no free slot on the lanes it may run on: lane codex is full (1 of its 1 slots taken)."},
		{"codex free", []string{run, aOnCodex, `{"phase":"a","ev":"fail","role":"worker","attempt":1,"reason":"gate"}`},
			"Its next attempt starts on lane codex at the next scheduling step."},
		{"an agent runs", []string{run, aOnCodex},
			"a is running (attempt 1)"},
		// The merge-tree dry runs' prediction (run_predict_conflict runs
		// it through the driver under CLAUDOPILOT_SOAK=1).
		{"a conflict predicted", []string{run, aOnCodex, `{"phase":"a","ev":"conflict","detail":"predicted conflict with c on shared.txt"}`},
			"Merge-tree dry runs found a predicted conflict with c on shared.txt: of the two, the phase earlier in the manifest lands first."},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out := explainID(t, "a", "1. [running] **a** — a\n2. [running] **c** — c (lane: codex)\n", c.recs...)
			if !strings.Contains(out, c.want) {
				t.Errorf("explain a said\n%s\nwant %q", out, c.want)
			}
		})
	}
}
