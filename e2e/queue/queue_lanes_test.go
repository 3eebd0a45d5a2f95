package queue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/internal/e2e"
	"github.com/claudopilot/claudopilot/issues/ghfake"
)

// run --issues with LANES: an issue is a node of the one scheduler, so its
// label lane:<id> pins it to that lane's slots and cooldown exactly as a
// phase's (lane: id) does (docs/lanes.md), not only to the lane's command.
//   - #1 (lane:codex) runs on codex; #2 (no label) takes the first lane
//     with a free slot, claude.
//   - #3 (lane:codex) waits while codex's one slot is busy, though claude
//     is free: #1's agent holds codex until #2's pull request is merged
//     (by then #2's slot is free and the loop has dispatched).
//   - #3's first agent on codex hits a rate limit: codex cools down and
//     its FALLBACK, claude, takes the relaunch at no attempt.
//
// Phase p0 waits on #1 and #3 (so that they outrank #2) and runs last.
//
// MAX_PARALLEL is 1: with LANES the lanes' slots replace it in every mode
// (the loop's one count). run --issues used to take a second, hidden slot
// from a MAX_PARALLEL pool inside the runner after the loop had launched
// the agent, so #2 (on claude) waited for #1's slot while #1 waited for
// #2's merge, until #1's agent gave up.
func TestRunIssuesLaneLabelIsTheLanes(t *testing.T) {
	if !e2e.Soak() {
		t.Skip("proven in package tests (scheduler TestOneSlotCountInEveryMode with LANES, TestLanePinnedWaitsForItsLane, TestLaneFallbackOnRateLimit); TestQueueLaneLabelIsTheLanes runs the same issues and lanes end to end; CLAUDOPILOT_SOAK=1 runs it")
	}
	out := laneLabelScenario(t, true, "run", "--issues", "--once", "--json", "--base", "main",
		"--max-supervisor-attempts", "0", "--poll-seconds", "1", "roadmap")
	// The --json stream says the same as the journal.
	for _, w := range []string{
		`"event":"launch","phase":"#1","state":"running","role":"worker","attempt":1,"lane":"codex"`,
		`"event":"launch","phase":"#3","state":"running","role":"worker","attempt":1,"lane":"claude"`,
		`"event":"cooldown","phase":"#3"`,
	} {
		if !strings.Contains(out, w) {
			t.Errorf("--json lacks %s:\n%s", w, out)
		}
	}
}

// queue alone with LANES: the same lanes as run --issues (one scheduler,
// one pacer pass, each lane's own slots and cooldown), not the lane's
// commands on MAX_PARALLEL shared slots.
func TestQueueLaneLabelIsTheLanes(t *testing.T) {
	if !e2e.Soak() {
		t.Skip("proven in package tests (internal/cli/wire TestQueueAloneTakesTheLanes: queue alone takes LANES as run --issues does; scheduler TestOneSlotCountInEveryMode with LANES, TestLanePinnedWaitsForItsLane, TestLaneFallbackOnRateLimit; issues TestLaneLabelPinsTheIssue: lane:<id> pins the issue's node); CLAUDOPILOT_SOAK=1 runs it")
	}
	laneLabelScenario(t, false, "queue", "--once", "--base", "main",
		"--max-supervisor-attempts", "0", "--poll-seconds", "1")
}

// laneLabelScenario runs claudopilot with args on the three issues of
// TestRunIssuesLaneLabelIsTheLanes (and phase p0 when withRoadmap), checks
// what ran where from the agents' records and the journal, and returns the
// driver's stdout.
func laneLabelScenario(t *testing.T, withRoadmap bool, args ...string) string {
	if testing.Short() {
		t.Skip("runs the driver against a fake GitHub")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	t.Parallel()
	bin := e2e.SelfAs(t, "claudopilot")
	dir := t.TempDir()
	env := e2e.Env(dir, filepath.Join(dir, "trace"))
	origin := filepath.Join(dir, "origin.git")
	merged := filepath.Join(dir, "first-merge")
	record := filepath.Join(dir, "record")
	files := map[string]string{"README": "lanes\n"}
	if withRoadmap {
		files["roadmap/EXECUTION-MANIFEST.md"] = "# Lanes\n\n1. [pending] **p0** — after the issues (deps: #1, #3)\n"
		files["roadmap/p0.md"] = "# p0\n"
	}
	seedOrigin(t, env, origin, "seed", files)

	fake := fakeGitHub(t, origin, env, "tok-123")
	fake.OnMerge(func(pr int) { os.WriteFile(merged, nil, 0o644) })
	fake.SetCI(func(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
		return []ghfake.CheckRun{{Name: "ci/test", Status: "completed", Conclusion: "success"}}, nil
	})
	fake.NewIssue("alice", "Codex one", "Write a file.", []string{"agent-ready", "lane:codex"}, "alice")
	fake.NewIssue("alice", "Anywhere", "Write a file.", []string{"agent-ready"}, "alice")
	fake.NewIssue("alice", "Codex two", "Write a file.", []string{"agent-ready", "lane:codex"}, "alice")

	work := filepath.Join(dir, "work")
	e2e.Git(t, dir, env, "clone", "-q", origin, work)
	// One script for both lanes: the first word of each record line is
	// the lane whose command ran it, then what the driver told it. #1's
	// agent waits (on a file, bounded) for the first merge.
	body := `#!/bin/sh
set -e
echo "$LANE_SCRIPT $CLAUDOPILOT_PHASE $CLAUDOPILOT_LANE" >> "$RECORD"
case "$LANE_SCRIPT $CLAUDOPILOT_PHASE" in
"codex #1")
	i=0
	while [ ! -f "$FIRST_MERGE" ]; do
		i=$((i+1)); [ $i -lt 3000 ] || { echo "no merge came"; exit 3; }
		sleep 0.1
	done
	;;
"codex #3")
	if [ ! -f "$RECORD.limited" ]; then
		touch "$RECORD.limited"
		echo "Rate limit reached, retry in 1 hour"
		exit 1
	fi
	;;
esac
case "$CLAUDOPILOT_PHASE" in
"#"*)
	n=${CLAUDOPILOT_PHASE#\#}
	mkdir -p work && echo "$LANE_SCRIPT" > "work/issue-$n.txt"
	git add -A && git commit -qm "issue $n"
	;;
*)
	echo "$CLAUDOPILOT_PHASE" > "$CLAUDOPILOT_PHASE.txt"
	d=$(dirname "$CLAUDOPILOT_PHASE_DOC"); b=$(basename "$CLAUDOPILOT_PHASE_DOC")
	git add -A && git mv "$CLAUDOPILOT_PHASE_DOC" "$d/DONE_$b" && git commit -qm "$CLAUDOPILOT_PHASE"
	;;
esac
`
	agent := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(agent, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = work
	cmd.Env = append(env, "GITHUB_TOKEN=tok-123", "GITHUB_API_URL="+fake.URL(), "GH_REPO=acme/widgets",
		"AUTO_MERGE=1", "RECORD="+record, "FIRST_MERGE="+merged, "MAX_PARALLEL=1",
		"LANES=claude codex",
		"LANE_CLAUDE_CMD=env LANE_SCRIPT=claude "+agent, "LANE_CLAUDE_CONCURRENCY=1",
		"LANE_CODEX_CMD=env LANE_SCRIPT=codex "+agent, "LANE_CODEX_CONCURRENCY=1", "LANE_CODEX_FALLBACK=claude",
		"RESOURCE_PROBE_CMD=echo 64 0 640000")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v\n%s\n%s", args[0], err, out.String(), errb.String())
		}
	case <-time.After(e2e.Bound(t)):
		cmd.Process.Kill()
		t.Fatalf("%s did not end:\n%s\n%s", args[0], out.String(), errb.String())
	}
	jb, err := os.ReadFile(filepath.Join(work, ".claudopilot", "state", "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dump := out.String() + errb.String() + "\njournal:\n" + string(jb)

	// The launches, in the journal's order, and how many came before the
	// first merge (#2's).
	var launches []string
	firstMerge := -1
	for _, line := range strings.Split(string(jb), "\n") {
		var r struct {
			Phase, Ev, Role, Lane string
			Attempt               int
		}
		if json.Unmarshal([]byte(line), &r) != nil {
			continue
		}
		switch r.Ev {
		case "launch":
			launches = append(launches, fmt.Sprintf("%s %s %s %d", r.Phase, r.Lane, r.Role, r.Attempt))
		case "merged":
			if firstMerge < 0 {
				firstMerge = len(launches)
			}
		}
	}
	want := []string{"#1 codex worker 1", "#2 claude worker 1", "#3 codex worker 1", "#3 claude worker 1"}
	if withRoadmap {
		want = append(want, "p0 claude worker 1")
	}
	for _, w := range want {
		if !slices.Contains(launches, w) {
			t.Errorf("no launch %q in %q\n%s", w, launches, dump)
		}
	}
	if len(launches) != len(want) {
		t.Errorf("launches %q, want %q\n%s", launches, want, dump)
	}
	// Until #2 merged, #1 held codex and claude was free: #3 waited.
	if i := slices.Index(launches, "#3 codex worker 1"); firstMerge < 0 || i < firstMerge {
		t.Errorf("#3 launched before #2 merged (codex busy, claude free): %q, first merge after %d\n%s", launches, firstMerge, dump)
	}
	if i, j := slices.Index(launches, "#3 codex worker 1"), slices.Index(launches, "#3 claude worker 1"); i < 0 || j < i {
		t.Errorf("#3 did not wait for codex before it fell back on claude: %q\n%s", launches, dump)
	}

	// The agents: the lane's own command ran, told its lane.
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(b)), "\n")
	wantRan := []string{"codex #1 codex", "claude #2 claude", "codex #3 codex", "claude #3 claude"}
	if withRoadmap {
		wantRan = append(wantRan, "claude p0 claude")
	}
	for _, w := range wantRan {
		if !slices.Contains(got, w) {
			t.Errorf("no agent %q in %q\n%s", w, got, dump)
		}
	}
	if len(got) != len(wantRan) {
		t.Errorf("agents %q, want %q\n%s", got, wantRan, dump)
	}
	for i := 1; i <= 3; i++ {
		if is, ok := fake.Issue(i); !ok || is.State != "closed" {
			t.Errorf("issue #%d = %+v, want closed\n%s", i, is, dump)
		}
	}
	if withRoadmap {
		live, _ := os.ReadFile(filepath.Join(work, "roadmap", "EXECUTION-MANIFEST.md"))
		if !strings.Contains(string(live), "[merged] **p0**") {
			t.Errorf("manifest:\n%s\n%s", live, dump)
		}
	}
	return out.String()
}
