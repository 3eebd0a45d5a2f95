package land_test

import (
	"github.com/claudopilot/claudopilot/state"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/claudopilot/claudopilot/scheduler"
)

const trainManifest = `# Execution Manifest

**Status:** in-progress
**Gate:** true

1. [pending] **t1** — one (deps: none)
2. [pending] **t2** — two (deps: none)
3. [pending] **t3** — three (deps: none)
4. [pending] **t4** — four (deps: none)
`

// trainJobs cuts a branch per id, each adding <id>.txt (and more files
// for some), gated by gate.
func (f *fixture) trainJobs(gate string, more map[string]map[string]string, ids ...string) []scheduler.MergeJob {
	f.t.Helper()
	var js []scheduler.MergeJob
	for _, id := range ids {
		files := map[string]string{id + ".txt": id + "\n"}
		for p, c := range more[id] {
			files[p] = c
		}
		_, tip := f.branch(id, "", files)
		j := job(id, "phase "+id, tip)
		j.Gate = gate
		js = append(js, j)
	}
	return js
}

// mustBuild builds a car and fails the test unless every job joined.
func (f *fixture) mustBuild(on string, js []scheduler.MergeJob) scheduler.CarBuild {
	f.t.Helper()
	b := f.owner.Build(f.ctx, scheduler.CarJob{On: on, Jobs: js})
	if b.Err != nil || b.Waiting != "" || len(b.Joined) != len(js) || b.Commit == "" {
		f.t.Fatalf("Build(%v on %q) = %+v, want every job joined", ids(js), on, b)
	}
	return b
}

func ids(js []scheduler.MergeJob) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.ID)
	}
	return out
}

// gateOn runs gate on a clean checkout of every first-parent commit from
// base (exclusive) to main and fails the test for each red one.
func (f *fixture) gateOnFirstParents(base, gate string) {
	f.t.Helper()
	chk := filepath.Join(f.t.TempDir(), "check")
	f.gitIn(f.top, "worktree", "add", "-q", "--detach", chk, "main")
	defer f.gitIn(f.top, "worktree", "remove", "--force", chk)
	for _, c := range strings.Fields(f.gitIn(f.top, "rev-list", "--first-parent", base+"..main")) {
		f.gitIn(chk, "checkout", "-q", "--detach", c)
		f.gitIn(chk, "clean", "-q", "-ffdx")
		cmd := exec.Command("sh", "-c", gate)
		cmd.Dir, cmd.Env = chk, f.env
		if out, err := cmd.CombinedOutput(); err != nil {
			f.t.Errorf("the gate is red on first-parent commit %.12s (%s): %v\n%s", c, f.gitIn(f.top, "log", "-1", "--format=%s", c), err, out)
		}
	}
}

// A train lands as ONE first-parent commit (issue 22 §4): its phases'
// merge commits, each with its [merged] flip, are a side line on the base,
// and the car's commit merges that line with the line's tree. t1 is red
// on the base alone (it needs t2), green at the train's top: the base's
// first-parent history holds only the train's commit, which is green; the
// side line keeps one commit per phase for bisection.
func TestBuildTrainIsOneFirstParentCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, trainManifest)
	gate := "! { test -f t1.txt && ! test -f t2.txt; }"
	js := f.trainJobs(gate, nil, "t1", "t2", "t3")
	base := f.rev("main")
	b := f.mustBuild("", js)
	if b.Base != base {
		t.Errorf("built on %s, want the base %s", b.Base, base)
	}
	if got := f.gitIn(f.top, "log", "-1", "--format=%s", b.Commit); got != "Merge train: t1, t2, t3" {
		t.Errorf("the car's subject = %q", got)
	}
	if f.rev(b.Commit+"^1") != base || f.rev(b.Commit+"^{tree}") != f.rev(b.Commit+"^2^{tree}") || b.Tree != f.rev(b.Commit+"^{tree}") {
		t.Errorf("the car's commit is not the base merged with its side line's tree")
	}
	side := f.gitIn(f.top, "log", "--first-parent", "--format=%s", base+".."+b.Commit+"^2")
	if side != "Merge t3: phase t3\nMerge t2: phase t2\nMerge t1: phase t1" {
		t.Errorf("side line = %q, want the three phases' merges", side)
	}
	g := f.owner.GateCar(f.ctx, scheduler.CarGate{Commit: b.Commit, Tree: b.Tree, Jobs: js})
	if !g.OK || g.Err != nil {
		t.Fatalf("the train's gate = %+v", g)
	}
	pub := f.owner.Publish(f.ctx, scheduler.CarPublish{From: base, To: b.Commit, Jobs: js, Tips: b.Tips})
	f.owner.Wait()
	if !pub.Out.OK || pub.Moved || f.rev("main") != b.Commit {
		t.Fatalf("publish = %+v, main %s", pub, f.rev("main"))
	}
	if fp := strings.Fields(f.gitIn(f.top, "rev-list", "--first-parent", base+"..main")); len(fp) != 1 {
		t.Errorf("%d first-parent commits, want the train's one", len(fp))
	}
	m := f.committed("main", manifestRel)
	for _, id := range []string{"t1", "t2", "t3"} {
		if !strings.Contains(m, "[merged] **"+id+"**") || f.branchExists(id) {
			t.Errorf("%s not [merged] on main, or its branch kept:\n%s", id, m)
		}
	}
	f.gateOnFirstParents(base, gate)
	// Handed over again (a driver killed before it heard): each is
	// found landed, nothing is built.
	again := f.owner.Build(f.ctx, scheduler.CarJob{Jobs: js})
	if len(again.Joined) != 0 || again.Commit != "" {
		t.Errorf("a landed train built again: %+v", again)
	}
	for k, o := range again.Outs {
		if !o.OK {
			t.Errorf("job %d = %+v, want found landed", k, o)
		}
	}
}

// Cars on top of each other are gated at once, each in its slot's gate
// worktree, and land in one move: the base gets both first-parent
// commits, each of which its gate passed.
func TestCarsGateSideBySideAndLandInOneMove(t *testing.T) {
	t.Parallel()
	f := newFixture(t, trainManifest)
	runs := filepath.Join(t.TempDir(), "gate-runs")
	gate := "echo \"$(basename \"$PWD\")\" >> '" + runs + "'"
	js := f.trainJobs(gate, nil, "t1", "t2")
	base := f.rev("main")
	c1 := f.mustBuild("", js[:1])
	c2 := f.mustBuild(c1.Commit, js[1:])
	if c2.Base != "" || f.rev(c2.Commit+"^1") != c1.Commit {
		t.Fatalf("the second car is not built on the first")
	}
	var wg sync.WaitGroup
	gs := make([]scheduler.CarGated, 2)
	for k, c := range []scheduler.CarBuild{c1, c2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gs[k] = f.owner.GateCar(f.ctx, scheduler.CarGate{Commit: c.Commit, Tree: c.Tree, Jobs: js[k : k+1], Slot: k})
		}()
	}
	wg.Wait()
	if !gs[0].OK || !gs[1].OK {
		t.Fatalf("gates %+v", gs)
	}
	b, _ := os.ReadFile(runs)
	dirs := strings.Fields(string(b))
	slices.Sort(dirs)
	if !slices.Equal(dirs, []string{"gate", "gate-2"}) {
		t.Errorf("gates ran in %v, want one per slot", dirs)
	}
	pub := f.owner.Publish(f.ctx, scheduler.CarPublish{From: base, To: c2.Commit, Jobs: js, Tips: append(c1.Tips, c2.Tips...)})
	f.owner.Wait()
	if !pub.Out.OK || f.rev("main") != c2.Commit || f.rev("main^1") != c1.Commit {
		t.Fatalf("publish %+v", pub)
	}
	// A tree gated once is not gated again.
	if g := f.owner.GateCar(f.ctx, scheduler.CarGate{Commit: c2.Commit, Tree: c2.Tree, Jobs: js[1:]}); !g.OK {
		t.Errorf("regate = %+v", g)
	}
	if b2, _ := os.ReadFile(runs); len(b2) != len(b) {
		t.Errorf("a green tree was gated again")
	}
}

// A phase that conflicts with a car ahead of it (or with a phase before
// it in its own train), which has not landed, comes back Ahead: it is
// not failed for a conflict with work that may never land. On the base
// itself it builds.
func TestBuildConflictAheadComesBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, trainManifest)
	js := f.trainJobs("true", map[string]map[string]string{"t1": {"a.txt": "one\n"}, "t2": {"a.txt": "two\n"}}, "t1", "t2")
	c1 := f.mustBuild("", js[:1])
	b := f.owner.Build(f.ctx, scheduler.CarJob{On: c1.Commit, Jobs: js[1:]})
	if len(b.Joined) != 0 || !b.Outs[0].Ahead {
		t.Errorf("t2 on t1's car = %+v, want Ahead", b)
	}
	train := f.owner.Build(f.ctx, scheduler.CarJob{Jobs: js})
	if !slices.Equal(train.Joined, []int{0}) || !train.Outs[1].Ahead {
		t.Errorf("the train t1, t2 = %+v, want t1 joined, t2 Ahead", train)
	}
	f.mustBuild("", js[1:])
}

// A base that moved since the cars were built (a human's commit) is not
// overwritten: the publish says Moved and nothing lands.
func TestPublishOnAMovedBaseSaysMoved(t *testing.T) {
	t.Parallel()
	f := newFixture(t, trainManifest)
	js := f.trainJobs("true", nil, "t1")
	base := f.rev("main")
	c := f.mustBuild("", js)
	human := f.commitOn(f.top, "human", map[string]string{"README.md": "edited\n"})
	pub := f.owner.Publish(f.ctx, scheduler.CarPublish{From: base, To: c.Commit, Jobs: js, Tips: c.Tips})
	if !pub.Moved || pub.Out.OK || f.rev("main") != human {
		t.Errorf("publish on a moved base = %+v, main %s (human %s)", pub, f.rev("main"), human)
	}
}

// In a train the phase that changes a protected file fails alone; the
// rest land.
func TestBuildRefusesTheProtectedLinkAlone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, trainManifest)
	var js []scheduler.MergeJob
	for _, id := range []string{"t1", "t2", "t3"} {
		var cs []change
		if id == "t2" {
			cs = append(cs, add("claudopilot.config", "SANDBOX=off\n"))
		}
		js = append(js, job(id, "phase "+id, f.hostileBranch(id, "", cs...)))
	}
	base := f.rev("main")
	b := f.owner.Build(f.ctx, scheduler.CarJob{Jobs: js})
	if !slices.Equal(b.Joined, []int{0, 2}) || b.Outs[1].Reason != state.ReasonProtected {
		t.Fatalf("build = %+v, want t1 and t3 joined, t2 refused as protected", b)
	}
	pub := f.owner.Publish(f.ctx, scheduler.CarPublish{From: base, To: b.Commit, Jobs: []scheduler.MergeJob{js[0], js[2]}, Tips: b.Tips})
	f.owner.Wait()
	if !pub.Out.OK {
		t.Fatalf("publish %+v", pub)
	}
	if _, has, _ := f.git.ReadFile(f.ctx, "main", "claudopilot.config"); has {
		t.Error("claudopilot.config reached main")
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
