package kube

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"

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
func TestPodBranchMeetsTheLocalChecks(t *testing.T) {
	t.Parallel()
	const done = `git mv roadmap/p1-first.md roadmap/DONE_p1-first.md && mkdir -p src && echo 'package src' > src/a.go && `
	for _, tc := range []struct {
		name, agent string
		want        state.Reason
	}{
		{"honest", done + `git add -A && git commit -qm p1`, ""},
		{"scope", done + `echo out > other.txt && git add -A && git commit -qm p1`, state.ReasonScope},
		{"secret", done + `echo "token = ghp_16C7e42F292c6912E7710c838347Ae178B4a" > src/token.txt && git add -A && git commit -qm p1`, state.ReasonSecret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCluster(t)
			l := state.Layout{Top: c.repo, RoadmapRel: "roadmap", Base: "main"}
			os.MkdirAll(filepath.Join(c.repo, "roadmap"), 0o755)
			os.WriteFile(filepath.Join(c.repo, l.ManifestRel()), []byte(roadmapSrc), 0o644)
			os.WriteFile(filepath.Join(c.repo, "roadmap", "p1-first.md"), []byte("# p1\n"), 0o644)
			run(t, c.repo, "git", "add", "-A")
			run(t, c.repo, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "roadmap")
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
			c.runPod(job, job.Name+"-a")
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

// TestPodResolvesAConflict: a supervisor sent to resolve the conflicts
// of a merge of the base runs in a pod. The driver's merge stops at the
// conflicts in the local worktree, uncommitted; the pod makes the same
// merge (conflicts left), the agent resolves and commits, and the driver
// takes the merge commit onto the branch. The pod reads the failure log
// its prompt names (CLAUDOPILOT_FAILURE_LOG), shipped as a file.
func TestPodResolvesAConflict(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	l := state.Layout{Top: c.repo, RoadmapRel: "roadmap", Base: "main"}
	git := func(args ...string) string {
		return run(t, c.repo, append([]string{"git", "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
	}
	os.MkdirAll(filepath.Join(c.repo, "roadmap"), 0o755)
	os.MkdirAll(filepath.Join(c.repo, "src"), 0o755)
	os.WriteFile(filepath.Join(c.repo, l.ManifestRel()), []byte(roadmapSrc), 0o644)
	os.WriteFile(filepath.Join(c.repo, "roadmap", "p1-first.md"), []byte("# p1\n"), 0o644)
	os.WriteFile(filepath.Join(c.repo, "src", "a.go"), []byte("package src // base\n"), 0o644)
	git("add", "-A")
	git("commit", "-qm", "roadmap")
	git("branch", "auto/p1")
	os.WriteFile(filepath.Join(c.repo, "src", "a.go"), []byte("package src // main\n"), 0o644)
	git("commit", "-qam", "main moves on")
	git("checkout", "-q", "auto/p1")
	os.WriteFile(filepath.Join(c.repo, "src", "a.go"), []byte("package src // p1\n"), 0o644)
	git("commit", "-qam", "p1's work")
	git("checkout", "-q", "main")
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
	tip := git("rev-parse", "auto/p1")
	if o.Reason == work.RemoteRefused || tip == git("rev-parse", "auto/p1~1") {
		t.Fatalf("outcome %+v", o)
	}
	if parents := git("rev-list", "--parents", "-n1", tip); !strings.Contains(parents, git("rev-parse", "main")) {
		t.Fatalf("the branch's tip %s is no merge of main (parents %s)", tip, parents)
	}
	if got := git("show", tip+":src/a.go"); got != "package src // p1 and main" {
		t.Fatalf("src/a.go on the branch: %q", got)
	}
}
