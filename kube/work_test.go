package kube

import (
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
