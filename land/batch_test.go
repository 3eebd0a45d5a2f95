package land_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

const trainManifest = `# Execution Manifest

**Status:** in-progress
**Gate:** true

1. [pending] **t1** — one (deps: none)
2. [pending] **t2** — two (deps: none)
3. [pending] **t3** — three (deps: none)
4. [pending] **t4** — four (deps: none)
`

// A train of 4 with one red phase: the top is red, the middle (t2) green,
// t3 red, so t1 and t2 land as one compare-and-swap, t3 fails with reason
// gate and the log of its red gate, and t4 comes back for the next train,
// where it lands. Every first-parent commit of the base, checked out
// clean, passes the gate; a train handed over again after it landed (a
// crash before the scheduler heard) merges nothing twice.
func TestMergeBatchBisectsToTheCulprit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, trainManifest)
	runs := filepath.Join(t.TempDir(), "gate-runs")
	// Red only where t1's file and t3's poison meet: each branch's own
	// gate is green.
	gate := "echo run >> '" + runs + "'; ! { test -f t1.txt && test -f poison; }"
	var js []scheduler.MergeJob
	for _, id := range []string{"t1", "t2", "t3", "t4"} {
		files := map[string]string{id + ".txt": id + "\n"}
		if id == "t3" {
			files["poison"] = "x\n"
		}
		_, tip := f.branch(id, "", files)
		j := job(id, "phase "+id, tip)
		j.Gate = gate
		js = append(js, j)
	}
	base := f.rev("main")
	outs := f.owner.MergeBatch(f.ctx, js)
	f.owner.Wait()
	if len(outs) != 4 {
		t.Fatalf("%d outcomes", len(outs))
	}
	for k, want := range []string{"ok", "ok", "gate", "again"} {
		o := outs[k]
		got := "?"
		switch {
		case o.OK:
			got = "ok"
		case o.Again:
			got = "again"
		case o.Reason == state.ReasonGate:
			got = "gate"
		}
		if got != want || o.ID != js[k].ID || o.Err != nil {
			t.Errorf("outcome %d = %+v, want %s", k, o, want)
		}
	}
	if outs[2].LogPath == "" || !strings.Contains(outs[2].Detail, outs[2].LogPath) {
		t.Errorf("the culprit's outcome has no gate log: %+v", outs[2])
	}
	if got := f.rev("main"); got != outs[1].Commit || f.rev("main^1^1") != base || f.rev("main^1") != outs[0].Commit {
		t.Errorf("main = %s, want t2's commit %s on t1's %s on %s", got, outs[1].Commit, outs[0].Commit, base)
	}
	if b, _ := os.ReadFile(runs); strings.Count(string(b), "run") != 3 {
		t.Errorf("gate runs = %q, want 3 (top, middle, culprit)", b)
	}
	if f.branchExists("t1") || f.branchExists("t2") || !f.branchExists("t3") || !f.branchExists("t4") {
		t.Error("landed branches not deleted, or the others not kept")
	}
	// The next train: t4 alone lands on t2.
	again := f.owner.MergeBatch(f.ctx, js[3:])
	f.owner.Wait()
	if !again[0].OK || f.rev("main") != again[0].Commit {
		t.Fatalf("t4 = %+v", again[0])
	}
	m := f.committed("main", manifestRel)
	for _, id := range []string{"t1", "t2", "t4"} {
		if !strings.Contains(m, "[merged] **"+id+"**") {
			t.Errorf("%s not [merged] on main:\n%s", id, m)
		}
	}
	if !strings.Contains(m, "[pending] **t3**") && !strings.Contains(m, "[running] **t3**") {
		t.Errorf("t3 changed on main:\n%s", m)
	}
	// Every first-parent commit is green on a clean checkout.
	chk := filepath.Join(t.TempDir(), "check")
	f.gitIn(f.top, "worktree", "add", "-q", "--detach", chk, "main")
	for _, c := range strings.Fields(f.gitIn(f.top, "rev-list", "--first-parent", base+"..main")) {
		f.gitIn(chk, "checkout", "-q", "--detach", c)
		f.gitIn(chk, "clean", "-q", "-ffdx")
		cmd := exec.Command("sh", "-c", gate)
		cmd.Dir, cmd.Env = chk, f.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("the gate is red on first-parent commit %s: %v\n%s", c, err, out)
		}
	}
	// Handed over again (the driver died before it heard): nothing moves.
	tip := f.rev("main")
	redo := f.owner.MergeBatch(f.ctx, []scheduler.MergeJob{js[0], js[1]})
	f.owner.Wait()
	if !redo[0].OK || !redo[1].OK || f.rev("main") != tip {
		t.Errorf("the landed train again = %+v, main %s → %s", redo, tip, f.rev("main"))
	}
}

// MERGE_BATCH_GATE=each gates every prefix of the train side by side, in
// a gate worktree each: the same outcome as the bisection, one gate run
// per commit.
func TestMergeBatchGateEach(t *testing.T) {
	t.Parallel()
	f := newFixture(t, trainManifest)
	f.owner.GateEach = true
	runs := filepath.Join(t.TempDir(), "gate-runs")
	gate := "echo \"$(basename \"$PWD\")\" >> '" + runs + "'; ! { test -f t1.txt && test -f poison; }"
	var js []scheduler.MergeJob
	for _, id := range []string{"t1", "t2", "t3", "t4"} {
		files := map[string]string{id + ".txt": id + "\n"}
		if id == "t3" {
			files["poison"] = "x\n"
		}
		_, tip := f.branch(id, "", files)
		j := job(id, "phase "+id, tip)
		j.Gate = gate
		js = append(js, j)
	}
	outs := f.owner.MergeBatch(f.ctx, js)
	f.owner.Wait()
	if !outs[0].OK || !outs[1].OK || outs[2].Reason != state.ReasonGate || !outs[3].Again {
		t.Fatalf("outcomes %+v", outs)
	}
	if f.rev("main") != outs[1].Commit {
		t.Errorf("main is not t2's merge commit")
	}
	b, _ := os.ReadFile(runs)
	dirs := strings.Fields(string(b))
	slices.Sort(dirs)
	if !slices.Equal(dirs, []string{"gate", "gate-2", "gate-3", "gate-4"}) {
		t.Errorf("gates ran in %v, want one per prefix, each in its own worktree", dirs)
	}
}

// GATE_RETRIES: a merge gate red once and green on the rerun lands, and
// the outcome says it was flaky (the scheduler journals it).
func TestMergeGateRetriesFlake(t *testing.T) {
	t.Parallel()
	f := newFixture(t, trainManifest)
	f.owner.GateRetries = 1
	seen := filepath.Join(t.TempDir(), "seen")
	_, tip := f.branch("t1", "", map[string]string{"t1.txt": "t1\n"})
	j := job("t1", "one", tip)
	j.Gate = "test -e '" + seen + "' || { : > '" + seen + "'; exit 1; }"
	out := f.mustMerge(j)
	if !strings.Contains(out.Flaky, "red 1 time(s) before green") {
		t.Errorf("Flaky = %q", out.Flaky)
	}
	// Without retries the same red gate is red.
	g := newFixture(t, trainManifest)
	seen2 := filepath.Join(t.TempDir(), "seen")
	_, tip = g.branch("t1", "", map[string]string{"t1.txt": "t1\n"})
	j = job("t1", "one", tip)
	j.Gate = "test -e '" + seen2 + "' || { : > '" + seen2 + "'; exit 1; }"
	if out := g.owner.Merge(g.ctx, j); out.OK || out.Reason != state.ReasonGate {
		t.Errorf("without GATE_RETRIES: %+v", out)
	}
}
