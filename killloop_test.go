package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The kill loop (issue #10's "done when"): the driver is stopped again and
// again, by SIGKILL, SIGINT and SIGTERM in turn, while everything that made
// adversarial runs lose work goes on around it: two phases that conflict
// (a supervisor resolves it), a gate, a human committing on the base every
// 2 s, an IDE running `git status` in the base checkout (it takes
// index.lock), an agent that leaves a setsid daemon committing on its
// branch, and a user's dirty README and untracked .env in the checkout.
// At the end: every phase merged exactly once, every agent commit reachable
// from the base, the gate green on a clean checkout of every first-parent
// commit, no conflict markers and no file from outside the worktrees on the
// base, every user file unchanged, every human commit kept, git fsck clean.
//
// 40 rounds under CLAUDOPILOT_SOAK=1 (.ci/run sets it); 6 otherwise.

const killManifest = `# Kill loop

**Status:** in-progress

1. [pending] **k1** — base (deps: none)
2. [pending] **k2** — left, writes shared.txt (deps: k1)
3. [pending] **k3** — right, writes shared.txt too (deps: k1)
4. [pending] **k4** — leaves a daemon (deps: none)
5. [pending] **k5** — join (deps: k2, k3)
6. [pending] **k6** — tail (deps: k5, k4)
7. [pending] **k7** — more (deps: k6)
8. [pending] **k8** — side (deps: k1)
9. [pending] **k9** — more (deps: k7, k8)
10. [pending] **k10** — last (deps: k9)
`

// killAgent is idempotent, as the crash test's: a relaunch carries on. A
// supervisor resolves shared.txt's conflict by keeping both sides' lines.
const killAgent = `#!/bin/sh
set -e
p=$CLAUDOPILOT_PHASE
rec() { git rev-parse HEAD >> "$TRACE"; }
if [ "$CLAUDOPILOT_ROLE" = supervisor ] && [ -f shared.txt ] && grep -qE '^(<<<<<<<|=======|>>>>>>>)' shared.txt; then
  grep -vE '^(<<<<<<<|=======|>>>>>>>)' shared.txt | sort -u > shared.tmp
  mv shared.tmp shared.txt
  git add shared.txt
  git commit -qm "resolve shared.txt for $p"
  rec
fi
f="work/$p.txt"
mkdir -p work
if [ ! -f "$f" ]; then
  echo "work of $p" > "$f"
  case $p in
  k2|k3) [ -f shared.txt ] || echo "line of $p" > shared.txt ;;
  esac
  git add -A work shared.txt 2>/dev/null || git add -A work
  git commit -qm "agent: $p"
  rec
fi
sleep 0.2
if [ -f "$CLAUDOPILOT_PHASE_DOC" ]; then
  d=$(dirname "$CLAUDOPILOT_PHASE_DOC"); b=$(basename "$CLAUDOPILOT_PHASE_DOC")
  git mv "$CLAUDOPILOT_PHASE_DOC" "$d/DONE_$b"
  git commit -qm "agent: $p done"
  rec
fi
if [ "$p" = k4 ]; then
  # A daemon that outlives the agent and keeps committing on the branch
  # (after the agent's own last commit, so the two never race for the
  # index). The driver must stop it before any gate runs: the gate fails
  # while it lives. What it committed before that is the agent's work.
  setsid sh -c 'echo $$ > "$(dirname "$TRACE")/daemon.pid"; while :; do echo x >> daemon.txt; git add daemon.txt; git commit -qm daemon >/dev/null 2>&1 || true; sleep 0.2; done' </dev/null >/dev/null 2>&1 &
fi
`

// killGate passes when every work file says what it should, shared.txt
// holds no conflict marker, and k4's daemon is dead. (It refused a
// daemon.txt once, with the daemon started before the agent's last commit
// and waiting 1 s: on a busy machine the agent took longer, the daemon's
// commits raced its own, and they were on the branch before any driver
// could stop anything.)
const killGate = `#!/bin/sh
for f in work/*.txt; do
  [ -e "$f" ] || continue
  p=$(basename "$f" .txt)
  grep -qx "work of $p" "$f" || { echo "bad $f"; exit 1; }
done
if [ -f shared.txt ] && grep -qE '^(<<<<<<<|=======|>>>>>>>)' shared.txt; then echo "markers in shared.txt"; exit 1; fi
pf="$(dirname "$TRACE")/daemon.pid"
if [ -s "$pf" ]; then
  # A zombie (stopped, waiting for an init that does not reap) is dead.
  s=$(cut -d' ' -f3 "/proc/$(cat "$pf")/stat" 2>/dev/null || true)
  [ -z "$s" ] || [ "$s" = Z ] || { echo "the agent's daemon still runs"; exit 1; }
fi
exit 0
`

const killPhases = 10

func TestKillLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("stops and restarts the driver dozens of times")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	t.Parallel()
	rounds := 6
	if os.Getenv("CLAUDOPILOT_SOAK") == "1" {
		rounds = 40
	}
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	trace := filepath.Join(dir, "trace")
	env := crashEnv(dir, trace)
	write := func(name, body string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("roadmap/EXECUTION-MANIFEST.md", killManifest, 0o644)
	for i := 1; i <= killPhases; i++ {
		write(fmt.Sprintf("roadmap/k%d.md", i), fmt.Sprintf("# k%d\n", i), 0o644)
	}
	write("gate.sh", killGate, 0o755)
	write("README.md", "# the project\n", 0o644)
	agent := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(agent, []byte(killAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, repo, env, "init", "-q", "-b", "main")
	git(t, repo, env, "add", "-A")
	git(t, repo, env, "commit", "-qm", "roadmap")
	// The user's own files: a dirty README and an untracked secret.
	userReadme := "# the project\n\nmy notes, not committed\n"
	userEnv := "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI7K7MDENGbPxRfiCYzq81KEY9\n"
	write("README.md", userReadme, 0o644)
	write(".env", userEnv, 0o600)

	ctx, stop := context.WithCancel(context.Background())
	humans := busyHuman(ctx, t, repo, env)
	ide := ideLoop(ctx, repo, env)
	defer func() { stop(); ide.Wait() }()

	bin := selfAs(t, "claudopilot")
	journal := filepath.Join(repo, ".claudopilot", "state", "journal.jsonl")
	args := []string{"run", "--base", "main", "--agent", agent, "--supervisor", agent, "--gate", "sh gate.sh",
		"--max-parallel", "3", "--max-supervisor-attempts", "3", "--poll-seconds", "1", "roadmap"}
	signals := []syscall.Signal{syscall.SIGKILL, syscall.SIGINT, syscall.SIGTERM}
	kills := 0
	var last string
	for round := 0; ; round++ {
		if round > rounds+60 {
			t.Fatalf("no end after %d starts:\n%s", round, last)
		}
		start := lines(journal)
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = repo, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		// Stop after 1 to 4 new journal events: every kind of event gets
		// a stop right after it, and each round still gets further.
		target := start + 1 + round%4
		if kills >= rounds {
			target = -1
		}
		var err error
		done := false
		deadline := time.After(5 * time.Minute) // an upper bound
	wait:
		for {
			select {
			case err = <-exited:
				done = true
				break wait
			case <-deadline:
				cmd.Process.Kill()
				t.Fatalf("round %d: driver hung:\n%s", round, out.String())
			case <-time.After(5 * time.Millisecond):
				if target >= 0 && lines(journal) >= target {
					sig := signals[kills%len(signals)]
					cmd.Process.Signal(sig)
					select {
					case <-exited:
					case <-time.After(2 * time.Minute): // a graceful stop waits for a merge in flight
						cmd.Process.Kill()
						<-exited
						t.Errorf("round %d: %v did not stop the driver within 2 minutes", round, sig)
					}
					kills++
					last = out.String()
					break wait
				}
			}
		}
		if done {
			if err != nil {
				t.Fatalf("round %d: driver failed: %v\n%s", round, err, out.String())
			}
			break
		}
	}
	stop()
	ide.Wait()
	commits := humans()
	t.Logf("%d stops, %d human commits", kills, len(commits))
	if kills < min(rounds, 4) {
		t.Fatalf("only %d stops: the test did not exercise restarts", kills)
	}
	checkKillLoop(t, dir, repo, env, trace, commits, userReadme, userEnv)
}

// checkKillLoop checks every promise after the last run ended.
func checkKillLoop(t *testing.T, dir, repo string, env []string, trace string, humans []string, userReadme, userEnv string) {
	log := git(t, repo, env, "log", "--first-parent", "--format=%s", "main")
	for i := 1; i <= killPhases; i++ {
		if n := strings.Count(log, fmt.Sprintf("Merge k%d:", i)); n != 1 {
			t.Errorf("k%d merged %d times:\n%s", i, n, log)
		}
	}
	shas, _ := os.ReadFile(trace)
	for _, sha := range strings.Fields(string(shas)) {
		if err := exec.Command("git", "-C", repo, "merge-base", "--is-ancestor", sha, "main").Run(); err != nil {
			t.Errorf("agent commit %s is not reachable from the base", sha)
		}
	}
	for _, c := range humans {
		if err := exec.Command("git", "-C", repo, "merge-base", "--is-ancestor", c, "main").Run(); err != nil {
			t.Errorf("human commit %s was lost", c)
		}
	}
	for _, c := range strings.Fields(git(t, repo, env, "rev-list", "--first-parent", "main")) {
		wt := filepath.Join(dir, "check-"+c[:8])
		git(t, repo, env, "worktree", "add", "-q", "--detach", wt, c)
		gate := exec.Command("sh", "gate.sh")
		gate.Dir, gate.Env = wt, env
		if out, err := gate.CombinedOutput(); err != nil {
			t.Errorf("gate red on a clean checkout of first-parent commit %s: %s", c, out)
		}
		git(t, repo, env, "worktree", "remove", "--force", wt)
	}
	if out, err := exec.Command("git", "-C", repo, "grep", "-nE", "^(<<<<<<<|>>>>>>>)", "main", "--").CombinedOutput(); err == nil {
		t.Errorf("conflict markers on the base:\n%s", out)
	}
	// Only the project's own files are on the base.
	for _, f := range strings.Fields(git(t, repo, env, "ls-tree", "-r", "--name-only", "main")) {
		ok := f == "gate.sh" || f == "README.md" || f == "shared.txt" || strings.HasPrefix(f, "roadmap/") ||
			strings.HasPrefix(f, "work/k") || strings.HasPrefix(f, "human/") || f == "daemon.txt"
		if !ok {
			t.Errorf("a file from outside the worktrees is on the base: %s", f)
		}
	}
	if got := git(t, repo, env, "show", "main:README.md"); got != "# the project\n" {
		t.Errorf("the committed README changed: %q", got)
	}
	for name, want := range map[string]string{"README.md": userReadme, ".env": userEnv} {
		if b, _ := os.ReadFile(filepath.Join(repo, name)); string(b) != want {
			t.Errorf("the user's %s changed: %q", name, b)
		}
	}
	if out, err := exec.Command("git", "-C", repo, "fsck", "--no-progress").CombinedOutput(); err != nil || strings.Contains(string(out), "error") {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
}

// busyHuman commits a new file on the base every 2 s until ctx ends, as a
// person working beside the run does (retrying while the driver holds the
// index). It returns a function giving the commits made.
func busyHuman(ctx context.Context, t *testing.T, repo string, env []string) func() []string {
	var mu sync.Mutex
	var commits []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
			name := fmt.Sprintf("human/%d.txt", n)
			os.MkdirAll(filepath.Join(repo, "human"), 0o755)
			os.WriteFile(filepath.Join(repo, name), []byte(fmt.Sprintf("human %d\n", n)), 0o644)
			for try := 0; try < 50 && ctx.Err() == nil; try++ {
				add := exec.Command("git", "-C", repo, "add", "--", name)
				add.Env = env
				c := exec.Command("git", "-C", repo, "commit", "-qm", "human "+name, "--", name)
				c.Env = env
				if add.Run() == nil && c.Run() == nil {
					head, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
					if err == nil {
						mu.Lock()
						commits = append(commits, strings.TrimSpace(string(head)))
						mu.Unlock()
					}
					break
				}
				time.Sleep(100 * time.Millisecond) // the index is locked: a person tries again
			}
		}
	}()
	return func() []string {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(commits)
	}
}

// ideLoop runs `git status` in the base checkout over and over, as an
// IDE does; it takes index.lock to refresh the index.
func ideLoop(ctx context.Context, repo string, env []string) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			c := exec.CommandContext(ctx, "git", "-C", repo, "status", "--porcelain")
			c.Env = env
			c.Run()
		}
	}()
	return &wg
}
