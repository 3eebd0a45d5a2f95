package queue

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/internal/e2e"
)

// TestQueueKillResume kills the queue's driver with SIGKILL while an
// issue's agent runs and starts it again: the same clone (its instance
// name kept in .claudopilot/state/instance) finds its own claim and
// resumes the issue at once, on its kept branch, instead of leaving it to
// go stale for CLAIM_STALE_HOURS. The issue is merged exactly once, by
// one pull request, in the one claim round the first run opened.
//
// It runs for queue --once and, under CLAUDOPILOT_SOAK=1, for run
// --issues --once (the issue a node of the roadmap's scheduler).
func TestQueueKillResume(t *testing.T) {
	if !e2e.Soak() {
		t.Skip("proven in package tests (issues TestStableInstance: the clone's instance name kept; TestOwnEarlierClaimIsResumed: a killed run's own claim resumed at once, one claim, its end in round 0; work TestReapStopsWhatAnEarlierDriverLeft: the killed driver's processes stopped at the next start; scheduler TestOutsideResumeTakesItsCounts); TestKillLoop kills and resumes a driver end to end; CLAUDOPILOT_SOAK=1 runs it")
	}
	if testing.Short() {
		t.Skip("kills and restarts the driver against a fake GitHub")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	t.Parallel()
	bin := e2e.SelfAs(t, "claudopilot")
	t.Run("queue", func(t *testing.T) {
		t.Parallel()
		queueKillResume(t, bin, false)
	})
	t.Run("run-issues", func(t *testing.T) {
		if !e2e.Soak() {
			t.Skip("proven in package tests (issues TestOwnEarlierClaimIsResumed: a killed run's own claim resumed at once; scheduler TestOutsideResumeTakesItsCounts: an issue node offered again after a kill); the queue subtest kills and resumes end to end; CLAUDOPILOT_SOAK=1 runs it")
		}
		t.Parallel()
		queueKillResume(t, bin, true)
	})
}

func queueKillResume(t *testing.T, bin string, roadmap bool) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace")
	env := e2e.Env(dir, trace)
	origin := filepath.Join(dir, "origin.git")
	files := map[string]string{"README": "seed\n"}
	if roadmap {
		files["roadmap/EXECUTION-MANIFEST.md"] = "# Kill\n\n1. [merged] **p0** — done before (deps: none)\n"
		files["roadmap/p0.md"] = "# p0\n"
	}
	seedOrigin(t, env, origin, "seed", files)

	fake := fakeGitHub(t, origin, env, "tok-kill-123")
	fake.NewIssue("alice", "Issue", "Write a file.", []string{"agent-ready"}, "alice")

	work := filepath.Join(dir, "work")
	e2e.Git(t, dir, env, "clone", "-q", origin, work)
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	// The agent commits its work, says so, then waits until the test lets
	// it go (the driver is killed meanwhile; its agent outlives it).
	agent := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(agent, []byte(`#!/bin/sh
set -e
echo "launch $CLAUDOPILOT_PHASE" >> "$TRACE"
if [ ! -f work/issue.txt ]; then
	mkdir -p work && echo issue > work/issue.txt
	git add -A && git commit -qm "issue"
fi
echo $$ > "$STARTED.pid"
touch "$STARTED"
while [ ! -f "$RELEASE" ]; do sleep 0.1; done
`), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func() (*exec.Cmd, *bytes.Buffer, chan error) {
		args := []string{"queue", "--once"}
		if roadmap {
			args = []string{"run", "--issues", "--once"}
		}
		args = append(args, "--base", "main", "--agent", agent, "--max-parallel", "1", "--poll-seconds", "1")
		if roadmap {
			args = append(args, "roadmap")
		}
		cmd := exec.Command(bin, args...)
		cmd.Dir = work
		cmd.Env = append(env, "GITHUB_TOKEN=tok-kill-123", "GITHUB_API_URL="+fake.URL(), "GH_REPO=acme/widgets",
			"AUTO_MERGE=1", "CHECKS_GRACE=0.2", "STARTED="+started, "RELEASE="+release)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		return cmd, &out, done
	}

	cmd, out1, done := run()
	deadline := time.After(e2e.Bound(t))
	for {
		if _, err := os.Stat(started); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("queue ended before its agent ran: %v\n%s", err, out1)
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("the agent never started:\n%s", out1)
		case <-time.After(50 * time.Millisecond): // polls for the file, bounded by deadline
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-done
	// The killed driver's agent still runs; the restarted driver must
	// stop it before the issue resumes. The release is for a failed test.
	t.Cleanup(func() { os.WriteFile(release, nil, 0o644) })
	pid, err := os.ReadFile(started + ".pid")
	if err != nil {
		t.Fatal(err)
	}
	name, err := os.ReadFile(filepath.Join(work, ".claudopilot", "state", "instance"))
	if err != nil {
		t.Fatalf("no instance file: %v\n%s", err, out1)
	}

	cmd2, out2, done2 := run()
	select {
	case err := <-done2:
		if err != nil {
			t.Fatalf("queue after the kill: %v\n%s", err, out2)
		}
	case <-time.After(e2e.Bound(t)):
		cmd2.Process.Kill()
		t.Fatalf("queue after the kill did not end:\n%s", out2)
	}
	logs := "first run:\n" + out1.String() + "\nsecond run:\n" + out2.String()
	if !strings.Contains(out2.String(), "resumed") {
		t.Errorf("the second run did not resume #1:\n%s", logs)
	}
	is, ok := fake.Issue(1)
	if !ok || is.State != "closed" {
		t.Fatalf("issue #1 = %+v, want closed by its merged pull request\n%s", is, logs)
	}
	if ps := fake.Pulls(); len(ps) != 1 || !ps[0].Merged {
		t.Errorf("pull requests = %+v, want one, merged\n%s", ps, logs)
	}
	claims, ends := 0, 0
	for _, c := range is.Comments {
		switch {
		case strings.Contains(c.Body, "claudopilot:claim "):
			claims++
			if !strings.Contains(c.Body, "instance="+strings.TrimSpace(string(name))+" ") {
				t.Errorf("claim by another instance than the clone's %q: %s", name, c.Body)
			}
		case strings.Contains(c.Body, "claudopilot:end "):
			ends++
			if !strings.Contains(c.Body, "round=0 ") {
				t.Errorf("end comment not in the first claim's round: %s", c.Body)
			}
		case strings.Contains(c.Body, "claudopilot:release "):
			t.Errorf("a claim was released: %s", c.Body)
		}
	}
	if claims != 1 || ends != 1 {
		t.Errorf("%d claim and %d end comments, want 1 and 1:\n%+v\n%s", claims, ends, is.Comments, logs)
	}
	if st, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
		t.Errorf("the killed driver's agent (pid %s) still runs after the restart:\n%s", pid, logs)
	}
	// The kept branch already had its commit: the resumed issue went
	// straight to the gate, its agent not run again.
	if tr, _ := os.ReadFile(trace); strings.Count(string(tr), "launch #1") != 1 {
		t.Errorf("agent launches:\n%s\n%s", tr, logs)
	}
	if got := e2e.Git(t, dir, env, "--git-dir", origin, "log", "--format=%s", "main", "--", "work/issue.txt"); strings.Count(got, "issue") != 1 {
		t.Errorf("the issue's commit on main: %q, want once", got)
	}
}
