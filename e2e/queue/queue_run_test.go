package queue

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/internal/e2e"
	"github.com/claudopilot/claudopilot/internal/gittest"
	"github.com/claudopilot/claudopilot/issues/ghfake"
)

// run --issues: a manifest phase that depends on issue #1 waits until #1's
// pull request is merged (by the queue, through the fake GitHub), then runs
// and merges. The fake performs real merges into a local bare origin.
//
// One base for phases and issues in the same run: with BASE_BRANCH unset,
// run --issues on a branch other than main (develop) merges its phases into
// that branch and opens the issue's pull request into it too (it used to
// go into GitHub's default branch while the phases merged into the current
// one). This was TestRunIssuesOneBase, a driver run of its own.
func TestRunIssuesPhaseWaitsOnIssue(t *testing.T) {
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
	mergedFlag := filepath.Join(dir, "issue-merged")
	seedOrigin(t, env, origin, "roadmap", map[string]string{
		"roadmap/EXECUTION-MANIFEST.md": "# Mixed\n\n1. [pending] **p1** — needs the issue's work (deps: #1)\n",
		"roadmap/p1.md":                 "# p1\n",
	})
	e2e.Git(t, dir, env, "--git-dir", origin, "branch", "develop", "main")

	fake := fakeGitHub(t, origin, env, "tok-123")
	fake.OnMerge(func(pr int) { os.WriteFile(mergedFlag, nil, 0o644) })
	// Green CI on every head: with no checks at all the queue would wait
	// out CHECKS_GRACE (2 minutes) before it merges.
	fake.SetCI(func(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
		return []ghfake.CheckRun{{Name: "ci/test", Status: "completed", Conclusion: "success"}}, nil
	})
	fake.NewIssue("alice", "Add the API", "Write work/issue.txt.", []string{"agent-ready"}, "alice")

	work := filepath.Join(dir, "work")
	e2e.Git(t, dir, env, "clone", "-q", "-b", "develop", origin, work)
	agent := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(agent, []byte(`#!/bin/sh
set -e
case "$CLAUDOPILOT_PHASE" in
"#"*)
	mkdir -p work && echo issue > work/issue.txt
	git add -A && git commit -qm "issue work"
	;;
*)
	if [ "$CLAUDOPILOT_PHASE" = p1 ] && [ ! -f "$MERGED_FLAG" ]; then
		echo "p1 started before #1 was merged"; exit 3
	fi
	echo "$CLAUDOPILOT_PHASE" > "$CLAUDOPILOT_PHASE.txt"
	doc=$CLAUDOPILOT_PHASE_DOC; d=${doc%/*}; b=${doc##*/} # roadmap/p1.md: the shell's expansions, not dirname and basename
	git add -A && git mv "$CLAUDOPILOT_PHASE_DOC" "$d/DONE_$b" && git commit -qm "$CLAUDOPILOT_PHASE"
	;;
esac
`), 0o755); err != nil {
		t.Fatal(err)
	}
	// No --base: the run's base is the current branch, develop.
	cmd := exec.Command(bin, "run", "--issues", "--once", "--agent", agent,
		"--max-supervisor-attempts", "0", "--poll-seconds", "1", "roadmap")
	cmd.Dir = work
	cmd.Env = append(env, "GITHUB_TOKEN=tok-123", "GITHUB_API_URL="+fake.URL(), "GH_REPO=acme/widgets",
		"AUTO_MERGE=1", "MERGED_FLAG="+mergedFlag)
	out := runWithin(t, cmd, "run --issues")
	live, _ := os.ReadFile(filepath.Join(work, "roadmap", "EXECUTION-MANIFEST.md"))
	if !strings.Contains(string(live), "[merged] **p1**") {
		t.Fatalf("manifest:\n%s\n%s", live, out.String())
	}
	if _, err := os.Stat(mergedFlag); err != nil {
		t.Fatalf("#1's pull request was never merged:\n%s", out.String())
	}
	if is, ok := fake.Issue(1); !ok || is.State != "closed" {
		t.Errorf("issue #1 = %+v, want closed by its merged pull request", is)
	}
	if log := e2e.Git(t, work, env, "log", "--merges", "--format=%s", "develop"); !strings.Contains(log, "Merge p1: needs the issue's work") {
		t.Errorf("p1 did not merge into develop:\n%s\n%s", log, out)
	}
	if pulls := fake.Pulls(); len(pulls) != 1 || pulls[0].Base != "develop" {
		t.Errorf("pull requests %+v, want one into develop, the run's base:\n%s", pulls, out)
	}
	if main := e2e.Git(t, dir, env, "--git-dir", origin, "log", "--format=%s", "main"); strings.TrimSpace(main) != "roadmap" {
		t.Errorf("main moved (the run's base is develop): %q", main)
	}
}

// run --issues: phases and issues share one pool of MAX_PARALLEL agent
// slots, so the driver never runs more agents than that at once (the
// queue used to run its own MAX_PARALLEL beside the roadmap's).
func TestRunIssuesSharesAgentSlots(t *testing.T) {
	if !e2e.Soak() {
		t.Skip("proven in package tests (scheduler TestOneSlotCountInEveryMode: MAX_PARALLEL over phases and issues together, with fake runners); TestRunIssuesPhaseWaitsOnIssue runs phases and issues in one driver end to end; CLAUDOPILOT_SOAK=1 runs it")
	}
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
	running := filepath.Join(dir, "running")
	seen := filepath.Join(dir, "seen")
	if err := os.MkdirAll(running, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"roadmap/EXECUTION-MANIFEST.md": "# Shared\n\n1. [pending] **p1** — one (deps: none)\n2. [pending] **p2** — two (deps: none)\n3. [pending] **p3** — three (deps: none)\n"}
	for _, id := range []string{"p1", "p2", "p3"} {
		files["roadmap/"+id+".md"] = "# " + id + "\n"
	}
	seedOrigin(t, env, origin, "roadmap", files)

	fake := fakeGitHub(t, origin, env, "tok-123")
	fake.SetCI(func(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
		return []ghfake.CheckRun{{Name: "ci/test", Status: "completed", Conclusion: "success"}}, nil
	})
	for i := 1; i <= 3; i++ {
		fake.NewIssue("alice", fmt.Sprintf("Issue %d", i), "Write a file.", []string{"agent-ready"}, "alice")
	}

	work := filepath.Join(dir, "work")
	e2e.Git(t, dir, env, "clone", "-q", origin, work)
	agent := filepath.Join(dir, "agent.sh")
	// Each agent counts the agents running beside it; it lingers a little
	// (at most 2 s, less once four run) so that agents that may overlap do.
	if err := os.WriteFile(agent, []byte(`#!/bin/sh
set -e
me="$RUNNING/$$"
touch "$me"
ls "$RUNNING" | wc -l >> "$SEEN"
i=0
while [ $i -lt 20 ] && [ "$(ls "$RUNNING" | wc -l)" -lt 4 ]; do sleep 0.1; i=$((i+1)); done
ls "$RUNNING" | wc -l >> "$SEEN"
rm -f "$me"
case "$CLAUDOPILOT_PHASE" in
"#"*)
	n=${CLAUDOPILOT_PHASE#\#}
	mkdir -p work && echo issue > "work/issue-$n.txt"
	git add -A && git commit -qm "issue $n"
	;;
*)
	echo "$CLAUDOPILOT_PHASE" > "$CLAUDOPILOT_PHASE.txt"
	doc=$CLAUDOPILOT_PHASE_DOC; d=${doc%/*}; b=${doc##*/} # roadmap/p1.md: the shell's expansions, not dirname and basename
	git add -A && git mv "$CLAUDOPILOT_PHASE_DOC" "$d/DONE_$b" && git commit -qm "$CLAUDOPILOT_PHASE"
	;;
esac
`), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--issues", "--once", "--base", "main", "--agent", agent,
		"--max-parallel", "2", "--max-supervisor-attempts", "0", "--poll-seconds", "1", "roadmap")
	cmd.Dir = work
	cmd.Env = append(env, "GITHUB_TOKEN=tok-123", "GITHUB_API_URL="+fake.URL(), "GH_REPO=acme/widgets",
		"AUTO_MERGE=1", "RUNNING="+running, "SEEN="+seen)
	out := runWithin(t, cmd, "run --issues")
	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	peak, runs := 0, 0
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("seen: %q", b)
		}
		peak, runs = max(peak, n), runs+1
	}
	if runs != 12 {
		t.Errorf("%d counts from agents, want 12 (six agents, two each):\n%s", runs, out.String())
	}
	if peak > 2 {
		t.Errorf("%d agents ran at once, MAX_PARALLEL is 2:\n%s", peak, out.String())
	}
	live, _ := os.ReadFile(filepath.Join(work, "roadmap", "EXECUTION-MANIFEST.md"))
	if strings.Count(string(live), "[merged]") != 3 {
		t.Errorf("manifest:\n%s\n%s", live, out.String())
	}
	for i := 1; i <= 3; i++ {
		if is, ok := fake.Issue(i); !ok || is.State != "closed" {
			t.Errorf("issue #%d = %+v, want closed", i, is)
		}
	}
}

// run --issues with MAX_PARALLEL=1: an issue whose pull request waits on
// its checks holds no agent slot. The checks stay pending until phase p0
// has run, so the run ends only if p0's agent gets the one slot while
// the pull request waits.
func TestRunIssuesCIWaitHoldsNoSlot(t *testing.T) {
	if !e2e.Soak() {
		t.Skip("proven in package tests (scheduler TestOutsideLandingHoldsNoSlot, TestOneSlotCountInEveryMode); TestRunIssuesPhaseWaitsOnIssue runs phases and issues in one driver end to end; CLAUDOPILOT_SOAK=1 runs it")
	}
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
	phaseRan := filepath.Join(dir, "p0-ran")
	issueDone := filepath.Join(dir, "issue-done")
	seedOrigin(t, env, origin, "roadmap", map[string]string{
		"roadmap/EXECUTION-MANIFEST.md": "# CI\n\n1. [pending] **p0** — independent (deps: none)\n",
		"roadmap/p0.md":                 "# p0\n",
	})

	fake := fakeGitHub(t, origin, env, "tok-123")
	fake.SetCI(func(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
		if _, err := os.Stat(phaseRan); err != nil {
			return []ghfake.CheckRun{{Name: "ci/test", Status: "in_progress"}}, nil
		}
		return []ghfake.CheckRun{{Name: "ci/test", Status: "completed", Conclusion: "success"}}, nil
	})
	fake.NewIssue("alice", "Issue", "Write a file.", []string{"agent-ready"}, "alice")

	work := filepath.Join(dir, "work")
	e2e.Git(t, dir, env, "clone", "-q", origin, work)
	agent := filepath.Join(dir, "agent.sh")
	// The phase's agent meets a passing API error until the issue's agent
	// has finished (the driver relaunches it after a backoff, at no cost,
	// and the slot is free meanwhile; a rate limit would hold the shared
	// agent command for the issue too), so the issue's pull request is
	// what waits on checks while p0 needs the slot.
	if err := os.WriteFile(agent, []byte(`#!/bin/sh
set -e
case "$CLAUDOPILOT_PHASE" in
"#"*)
	mkdir -p work && echo issue > work/issue.txt
	git add -A && git commit -qm "issue"
	touch "$ISSUE_DONE"
	;;
*)
	if [ ! -f "$ISSUE_DONE" ]; then echo "503 Service Unavailable"; exit 1; fi
	echo p0 > p0.txt
	doc=$CLAUDOPILOT_PHASE_DOC; d=${doc%/*}; b=${doc##*/} # roadmap/p1.md: the shell's expansions, not dirname and basename
	git add -A && git mv "$CLAUDOPILOT_PHASE_DOC" "$d/DONE_$b" && git commit -qm p0
	touch "$PHASE_RAN"
	;;
esac
`), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--issues", "--once", "--base", "main", "--agent", agent,
		"--max-parallel", "1", "--max-supervisor-attempts", "0", "--poll-seconds", "1", "--rate-limit-sleep", "1", "roadmap")
	cmd.Dir = work
	cmd.Env = append(env, "GITHUB_TOKEN=tok-123", "GITHUB_API_URL="+fake.URL(), "GH_REPO=acme/widgets",
		"AUTO_MERGE=1", "PHASE_RAN="+phaseRan, "ISSUE_DONE="+issueDone)
	out := runWithin(t, cmd, "run --issues")
	if is, ok := fake.Issue(1); !ok || is.State != "closed" {
		t.Errorf("issue #1 = %+v, want closed\n%s", is, out.String())
	}
	live, _ := os.ReadFile(filepath.Join(work, "roadmap", "EXECUTION-MANIFEST.md"))
	if !strings.Contains(string(live), "[merged] **p0**") {
		t.Errorf("manifest:\n%s\n%s", live, out.String())
	}
}

// runWithin runs the driver's cmd to its end and fails the test if it
// fails or has not ended within e2e.Bound (an upper bound against a hang, not
// a wait); it returns what it printed.
func runWithin(t *testing.T, cmd *exec.Cmd, what string) *bytes.Buffer {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out.String())
		}
	case <-time.After(e2e.Bound(t)):
		cmd.Process.Kill()
		t.Fatalf("%s did not end:\n%s", what, out.String())
	}
	return &out
}

// fakeGitHub is the fake GitHub of acme/widgets over the bare origin, with
// alice (admin) who files and labels issues and the driver's user bot
// (write) behind token; closed with the test.
func fakeGitHub(t *testing.T, origin string, env []string, token string) *ghfake.Server {
	t.Helper()
	fake := ghfake.New(ghfake.Options{Owner: "acme", Repo: "widgets", Origin: origin, GitEnv: env})
	t.Cleanup(fake.Close)
	fake.AddUser("alice", "admin")
	fake.AddUser("bot", "write")
	fake.AddToken(token, "bot")
	return fake
}

// seedOrigin makes a bare origin whose main holds files (mode 644) in
// one commit with message msg: the repository the fake GitHub serves. Two
// git processes (init, fast-import), where a seed clone's init, add,
// commit and push to it were eight with the push's receive-pack and
// unpack-objects (#23; every queue test makes one).
func seedOrigin(t *testing.T, env []string, origin, msg string, files map[string]string) {
	t.Helper()
	e2e.Git(t, filepath.Dir(origin), env, "init", "-q", "--bare", "-b", "main", origin)
	gittest.Import(t, env, origin, gittest.Commit{Ref: "main", Message: msg, Files: files})
}
