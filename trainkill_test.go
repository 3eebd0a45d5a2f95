package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/scheduler"
)

// The train kill test (#17): the driver is killed with SIGKILL while the
// gate of a merge train runs, and restarted. It waits on the driver's
// --json stream for the gate event of a train (two phases or more with the
// merge owner), not on time. The merge gate holds until the test lets it
// go, so the kill always lands during it. At the end: every phase merged
// exactly once, the base ref only ever held gated commits (its reflog
// against the gate's own list of green commits), the gate green on a clean
// checkout of every first-parent commit.

const trainKillPhases = 5

// trainKillGate checks the work files. Run as a merge gate (in the merge
// owner's gate worktree), it notes the commit it tests in $CTL/gating and
// holds until the test writes $CTL/go-<its pid> (green: the commit goes on
// $CTL/green) or $CTL/dead-<its pid> (the driver was killed: red, so an
// orphaned gate never counts). By pid, not commit: a restarted driver may
// build the same merge commit again within the second.
const trainKillGate = `#!/bin/sh
for f in work/*.txt; do
  [ -e "$f" ] || continue
  p=$(basename "$f" .txt)
  grep -qx "work of $p" "$f" || { echo "bad $f"; exit 1; }
done
case "$(pwd -P)" in
*/.claudopilot/gate*)
  h=$(git rev-parse HEAD)
  echo "$$" >> "$CTL/gating"
  while [ ! -e "$CTL/go-$$" ] && [ ! -e "$CTL/dead-$$" ]; do sleep 0.05; done
  [ -e "$CTL/go-$$" ] || exit 1
  echo "$h" >> "$CTL/green"
  ;;
esac
exit 0
`

func TestKillTrainUnderGate(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the driver")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	t.Parallel()
	bin := selfAs(t, "claudopilot")
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	ctl := filepath.Join(dir, "ctl")
	trace := filepath.Join(dir, "trace")
	env := append(crashEnv(dir, trace), "CTL="+ctl, "MERGE_BATCH=8")
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
	var m strings.Builder
	m.WriteString("# Train kill\n\n**Status:** in-progress\n\n")
	for i := 1; i <= trainKillPhases; i++ {
		fmt.Fprintf(&m, "%d. [pending] **q%d** — q%d (deps: none)\n", i, i, i)
		write(fmt.Sprintf("roadmap/q%d.md", i), fmt.Sprintf("# q%d\n", i), 0o644)
	}
	write("roadmap/EXECUTION-MANIFEST.md", m.String(), 0o644)
	write("gate.sh", trainKillGate, 0o755)
	if err := os.MkdirAll(ctl, 0o755); err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(agent, []byte(crashAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, repo, env, "init", "-q", "-b", "main")
	git(t, repo, env, "add", "-A")
	git(t, repo, env, "commit", "-qm", "roadmap")
	first := strings.TrimSpace(git(t, repo, env, "rev-parse", "main"))

	touch := func(name string) {
		if err := os.WriteFile(filepath.Join(ctl, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gates := 0 // merge gates the gate script has noted, over all rounds
	// nextGate waits for the gate script of the merge gate whose event
	// just came to note its pid.
	nextGate := func() string {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			b, _ := os.ReadFile(filepath.Join(ctl, "gating"))
			if l := strings.Fields(string(b)); len(l) > gates {
				gates++
				return l[gates-1]
			}
			if time.Now().After(deadline) {
				t.Fatalf("the merge gate of event %d did not start within 2 minutes", gates+1)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	onMain := func(id string) bool {
		return strings.Contains(git(t, repo, env, "log", "--first-parent", "--format=%s", "main"), "Merge "+id+":")
	}

	const wantKills = 2
	kills := 0
	args := []string{"run", "--json", "--base", "main", "--agent", agent, "--gate", "sh gate.sh", "--max-parallel", fmt.Sprint(trainKillPhases), "roadmap"}
	for round := 0; ; round++ {
		if round > 20 {
			t.Fatalf("no end after %d rounds", round)
		}
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = repo, env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		events := make(chan scheduler.Event)
		go func() {
			defer close(events)
			sc := bufio.NewScanner(stdout)
			sc.Buffer(make([]byte, 64*1024), 1<<20)
			for sc.Scan() {
				var e scheduler.Event
				if json.Unmarshal(sc.Bytes(), &e) == nil && e.Kind != "" {
					events <- e
				}
			}
		}()
		merging := map[string]bool{}
		running := 0
		held := "" // a lone merge's gate, held until no agent runs so a train forms behind it
		killed := false
		timeout := time.After(5 * time.Minute)
	read:
		for {
			var e scheduler.Event
			var ok bool
			select {
			case e, ok = <-events:
			case <-timeout:
				cmd.Process.Kill()
				t.Fatalf("round %d: no end within 5 minutes:\n%s", round, stderr.String())
			}
			if !ok {
				break read
			}
			switch e.Kind {
			case scheduler.EvLaunch:
				running++
			case scheduler.EvExit:
				if e.Role != "" {
					running--
				} else {
					delete(merging, e.Phase) // a red merge
				}
			case scheduler.EvMerging:
				merging[e.Phase] = true
			case scheduler.EvMerged, scheduler.EvWait:
				delete(merging, e.Phase)
			case scheduler.EvGate:
				if e.Detail != "merge" {
					break
				}
				pid := nextGate()
				if len(merging) >= 2 && kills < wantKills {
					// A train under test: kill the driver now.
					train := mapKeys(merging)
					cmd.Process.Signal(syscall.SIGKILL)
					kills++
					killed = true
					touch("dead-" + pid)
					for range events {
					}
					cmd.Wait()
					for _, id := range train {
						if onMain(id) {
							t.Errorf("round %d: %s of the train under test is on main after the kill", round, id)
						}
					}
					t.Logf("round %d: killed during the gate of the train %v", round, train)
					break read
				}
				if len(merging) < 2 && running > 0 {
					held = pid
				} else {
					touch("go-" + pid)
				}
			}
			if held != "" && running == 0 {
				touch("go-" + held)
				held = ""
			}
		}
		if killed {
			continue
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("round %d: driver failed: %v\n%s", round, err, stderr.String())
		}
		break
	}
	if kills == 0 {
		t.Fatal("no train's gate was ever seen: the test did not aim at a train")
	}
	t.Logf("%d kills during a train's gate", kills)

	// Everything merged exactly once.
	log := git(t, repo, env, "log", "--first-parent", "--format=%s", "main")
	for i := 1; i <= trainKillPhases; i++ {
		if n := strings.Count(log, fmt.Sprintf("Merge q%d:", i)); n != 1 {
			t.Errorf("q%d merged %d times:\n%s", i, n, log)
		}
	}
	man := git(t, repo, env, "show", "main:roadmap/EXECUTION-MANIFEST.md")
	if strings.Count(man, "[merged]") != trainKillPhases || !strings.Contains(man, "**Status:** complete") {
		t.Errorf("committed manifest:\n%s", man)
	}
	// The base ref only ever held commits whose merge gate passed.
	b, _ := os.ReadFile(filepath.Join(ctl, "green"))
	green := map[string]bool{first: true}
	for _, h := range strings.Fields(string(b)) {
		green[h] = true
	}
	held := strings.Fields(git(t, repo, env, "reflog", "show", "--format=%H", "refs/heads/main"))
	if len(held) < 2 {
		t.Errorf("main's reflog has %d entries: it cannot tell what main held", len(held))
	}
	for _, h := range held {
		if !green[h] {
			t.Errorf("main held %s, which no merge gate passed (green: %v)", h, mapKeys(green))
		}
	}
	// The gate is green on a clean checkout of every first-parent commit.
	for _, c := range strings.Fields(git(t, repo, env, "rev-list", "--first-parent", "main")) {
		wt := filepath.Join(dir, "check-"+c[:8])
		git(t, repo, env, "worktree", "add", "-q", "--detach", wt, c)
		gate := exec.Command("sh", "gate.sh")
		gate.Dir, gate.Env = wt, env
		if out, err := gate.CombinedOutput(); err != nil {
			t.Errorf("gate red on first-parent commit %s: %s", c, out)
		}
		git(t, repo, env, "worktree", "remove", "--force", wt)
	}
	// No agent commit lost.
	shas, _ := os.ReadFile(trace)
	for _, sha := range strings.Fields(string(shas)) {
		if out := git(t, repo, env, "branch", "-a", "--contains", sha); strings.TrimSpace(out) == "" {
			t.Errorf("agent commit %s is on no branch", sha)
		}
	}
}

func mapKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
