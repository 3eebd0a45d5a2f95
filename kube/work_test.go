package kube

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/claudopilot/claudopilot/internal/gittest"
	"github.com/claudopilot/claudopilot/land"
	"github.com/claudopilot/claudopilot/prompts"
	"github.com/claudopilot/claudopilot/protect"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
)

const roadmapSrc = `# Execution Manifest

**Status:** in-progress

1. [pending] **p1** — first phase (owns: src/) (deps: none)
`

// TestPodBranchMeetsTheLocalChecks: an attempt through package work
// with AGENT_RUNNER=kubernetes (the pod's containers run for real), then
// the landing through the one local merge owner. A pod that pushes a
// branch changing a file outside the phase's scope, or holding a secret,
// is refused at landing as a local agent's would be; an honest one lands.
// The honest pod runs its containers for real; the secret one's result is
// imported on the remote (importKubelet), outside CLAUDOPILOT_SOAK=1: what
// the landing checks is the branch the driver fetched.
func TestPodBranchMeetsTheLocalChecks(t *testing.T) {
	t.Parallel()
	const done = `git mv roadmap/p1-first.md roadmap/DONE_p1-first.md && mkdir -p src && echo 'package src' > src/a.go && `
	const token = "token = ghp_16C7e42F292c6912E7710c838347Ae178B4a"
	for _, tc := range []struct {
		name, agent string
		want        state.Reason
		soak        bool // under CLAUDOPILOT_SOAK=1 only
		// result, when set, is the pod's result imported on the remote
		// (fakeKubelet: one git) instead of the containers run for real
		// (about 25 processes), but under CLAUDOPILOT_SOAK=1. What the
		// containers do with an honest agent's work is TestHappyPath's
		// (its pod's commit is the result) and TestPodResolvesAConflict's.
		result *gittest.Commit
	}{
		{"honest", done + `git add -A && git commit -qm p1`, "", false,
			&gittest.Commit{Message: "p1\n", Renames: [][2]string{{"roadmap/p1-first.md", "roadmap/DONE_p1-first.md"}}, Files: map[string]string{"src/a.go": "package src\n"}}},
		{"scope", done + `echo out > other.txt && git add -A && git commit -qm p1`, state.ReasonScope, true, nil},
		{"secret", done + `echo "` + token + `" > src/token.txt && git add -A && git commit -qm p1`, state.ReasonSecret, false,
			&gittest.Commit{Message: "p1\n", Renames: [][2]string{{"roadmap/p1-first.md", "roadmap/DONE_p1-first.md"}},
				Files: map[string]string{"src/a.go": "package src\n", "src/token.txt": token + "\n"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.soak && os.Getenv("CLAUDOPILOT_SOAK") != "1" {
				t.Skip("CLAUDOPILOT_SOAK=1 only; the secret case of this test proves a pod's branch meets the landing's local checks, land's TestMergeScope the scope check")
			}
			t.Parallel()
			c := newClusterWith(t, "roadmap", withRoadmap)
			l := state.Layout{Top: c.repo, RoadmapRel: "roadmap", Base: "main"}
			if err := c.git.Exclude(context.Background(), "/.claudopilot/"); err != nil {
				t.Fatal(err)
			}
			env := append(os.Environ(), "HOME="+t.TempDir())
			r := &work.Runner{Git: c.git, Layout: l, Agent: tc.agent, Super: "true", Env: env, KillGrace: time.Second,
				Remote: Runner{Driver: c.driver(c.cfg)}, Prompts: prompts.Set{}}
			j := scheduler.Job{ID: "p1", Title: "first phase", Doc: "p1-first.md", Owns: []string{"src/"}, Role: state.Worker, Attempt: 1, Gate: "true"}
			out := make(chan scheduler.Outcome, 1)
			go func() { out <- r.Run(context.Background(), j, func(int) {}) }()
			job := <-c.jobs
			kubelet := c.kubelet
			if tc.result != nil && os.Getenv("CLAUDOPILOT_SOAK") != "1" {
				kubelet = c.importKubelet(*tc.result)
			}
			c.runPodWith(job, job.Name+"-a", kubelet)
			c.endJob(job.Name, batchv1.JobComplete, "Completed")
			o := <-out
			if !o.OK {
				t.Fatalf("outcome %+v", o)
			}
			if tip := run(t, c.repo, "git", "rev-parse", "auto/p1"); tip != o.Tip {
				t.Fatalf("the branch is at %s, the outcome's tip %s", tip, o.Tip)
			}
			if c.job(job.Name) != nil {
				t.Error("the Job was not deleted once its result was taken")
			}
			owner := &land.Owner{Git: c.git, Layout: l, Live: roadmap.NewFile(filepath.Join(c.repo, l.ManifestRel())), Env: env, KillGrace: time.Second}
			// The roadmap's own files, as the engine gathers them.
			rm, err := roadmap.Load(filepath.Join(c.repo, "roadmap"), roadmap.Options{})
			if err != nil {
				t.Fatal(err)
			}
			owner.Protect = &protect.Set{Rules: append(rm.Protected(l.RoadmapRel, l.Manifest), l.Protected()...)}
			defer owner.Wait()
			m := owner.Merge(context.Background(), scheduler.MergeJob{ID: "p1", Title: "first phase (owns: src/)", Owns: []string{"src/"}, Tip: o.Tip, Gate: "true"})
			if m.Reason != tc.want || (tc.want == "") != m.OK {
				t.Fatalf("landing %+v, want reason %q", m, tc.want)
			}
			if tc.want != "" && !strings.Contains(m.Detail, map[state.Reason]string{state.ReasonScope: "other.txt", state.ReasonSecret: "token.txt"}[tc.want]) {
				t.Errorf("detail %q", m.Detail)
			}
		})
	}
}

// withRoadmap commits the roadmap (roadmapSrc, roadmap/p1-first.md).
func withRoadmap(repo string) error {
	l := state.Layout{RoadmapRel: "roadmap"}
	if err := os.MkdirAll(filepath.Join(repo, "roadmap"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(repo, l.ManifestRel()), []byte(roadmapSrc), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(repo, "roadmap", "p1-first.md"), []byte("# p1\n"), 0o644); err != nil {
		return err
	}
	if _, err := gitOut(repo, "add", "-A"); err != nil {
		return err
	}
	_, err := gitOut(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "roadmap")
	return err
}

// withConflict commits the roadmap and src/a.go, then changes src/a.go
// on main and, otherwise, on auto/p1; main is checked out.
func withConflict(repo string) error {
	if err := os.MkdirAll(filepath.Join(repo, "src"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(repo, "src", "a.go"), []byte("package src // base\n"), 0o644); err != nil {
		return err
	}
	if err := withRoadmap(repo); err != nil {
		return err
	}
	for _, step := range []struct {
		a   string // src/a.go's comment, before the git command; "": none
		git []string
	}{
		{"", []string{"branch", "auto/p1"}},
		{"main", []string{"commit", "-qam", "main moves on"}},
		{"", []string{"checkout", "-q", "auto/p1"}},
		{"p1", []string{"commit", "-qam", "p1's work"}},
		{"", []string{"checkout", "-q", "main"}},
	} {
		if step.a != "" {
			if err := os.WriteFile(filepath.Join(repo, "src", "a.go"), []byte("package src // "+step.a+"\n"), 0o644); err != nil {
				return err
			}
		}
		if _, err := gitOut(repo, append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, step.git...)...); err != nil {
			return err
		}
	}
	return nil
}

// TestPodResolvesAConflict: a supervisor sent to resolve the conflicts
// of a merge of the base runs in a pod. The driver's merge stops at the
// conflicts in the local worktree, uncommitted; the pod makes the same
// merge (conflicts left), the agent resolves and commits, and the driver
// takes the merge commit onto the branch. The pod reads the failure log
// its prompt names (CLAUDOPILOT_FAILURE_LOG), shipped as a file.
func TestPodResolvesAConflict(t *testing.T) {
	t.Parallel()
	c := newClusterWith(t, "conflict", withConflict)
	l := state.Layout{Top: c.repo, RoadmapRel: "roadmap", Base: "main"}
	git := func(args ...string) string {
		return run(t, c.repo, append([]string{"git", "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
	}
	// p1's work, as the template left it (a loose ref: nothing packed it).
	work1, err := os.ReadFile(filepath.Join(c.repo, ".git", "refs", "heads", "auto", "p1"))
	if err != nil {
		t.Fatal(err)
	}
	// The worker's worktree, which a supervisor takes over.
	git("worktree", "add", "-q", filepath.Join(c.repo, ".claudopilot", "worktrees", "p1"), "auto/p1")
	if err := c.git.Exclude(context.Background(), "/.claudopilot/"); err != nil {
		t.Fatal(err)
	}
	failure := filepath.Join(t.TempDir(), "worker-1.log")
	os.WriteFile(failure, []byte("the worker's last words\n"), 0o644)
	// The supervisor checks that it is in the merge, resolves and
	// concludes it.
	super := `git rev-parse -q --verify MERGE_HEAD && grep -q '<<<<<<<' src/a.go && cat "$CLAUDOPILOT_FAILURE_LOG" && ` +
		`echo 'package src // p1 and main' > src/a.go && git add src/a.go && git commit -qm "resolve the conflict with main"`
	env := append(os.Environ(), "HOME="+t.TempDir())
	r := &work.Runner{Git: c.git, Layout: l, Agent: "false", Super: super, Env: env, KillGrace: time.Second,
		Remote: Runner{Driver: c.driver(c.cfg)}, Prompts: prompts.Set{}}
	j := scheduler.Job{ID: "p1", Title: "first phase", Doc: "p1-first.md", Owns: []string{"src/"}, Role: state.Supervisor, Attempt: 1, Gate: "true",
		Failure: state.ReasonConflict, Detail: "conflicts with main: src/a.go", FailureLog: failure}
	out := make(chan scheduler.Outcome, 1)
	go func() { out <- r.Run(context.Background(), j, func(int) {}) }()
	var job *batchv1.Job
	select {
	case job = <-c.jobs:
	case o := <-out:
		t.Fatalf("no Job; outcome %+v", o)
	}
	var log bytes.Buffer
	p := c.createPod(job, job.Name+"-a", nil)
	code, msg := c.kubelet(p, &log)
	c.updatePod(p, agentEnded(code, "", msg))
	c.endJob(job.Name, batchv1.JobComplete, "Completed")
	o := <-out
	if code != 0 || !strings.Contains(log.String(), "the worker's last words") {
		t.Fatalf("the pod's agent exited %d:\n%s", code, log.String())
	}
	// The branch's tip and its parents: p1's work and main (main did
	// not move: c.main).
	commits := strings.Fields(git("rev-list", "--parents", "-n1", "auto/p1"))
	tip := commits[0]
	if o.Reason == work.RemoteRefused || tip == strings.TrimSpace(string(work1)) {
		t.Fatalf("outcome %+v", o)
	}
	if parents := commits[1:]; !slices.Contains(parents, c.main) || !slices.Contains(parents, strings.TrimSpace(string(work1))) {
		t.Fatalf("the branch's tip %s is no merge of main %s into p1's work (parents %s)", tip, c.main, parents)
	}
	if got := git("show", tip+":src/a.go"); got != "package src // p1 and main" {
		t.Fatalf("src/a.go on the branch: %q", got)
	}
}
