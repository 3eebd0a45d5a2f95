package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/claudopilot/claudopilot/internal/gittest"
	"github.com/claudopilot/claudopilot/proc"
)

// doneAgent does phase p1 the way an agent does: renames its doc,
// commits, and says so.
const doneAgent = `echo "agent: working on $CLAUDOPILOT_PHASE"; cat "$CLAUDOPILOT_PROMPT_FILE"; git mv phases/p1.md phases/DONE_p1.md && git commit -qm "p1 done"; echo "agent: done"`

// bg runs the attempt in the background; the test plays the cluster.
type bg struct {
	res chan Result
	out *lockedBuf
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func start(ctx context.Context, d *Driver, a Attempt) bg {
	b := bg{res: make(chan Result, 1), out: &lockedBuf{}}
	go func() { b.res <- d.Run(ctx, a, b.out) }()
	return b
}

// TestHappyPath: one attempt through a pod whose containers run for
// real, to its result and Done. The attempt carries a doc the driver
// writes and never commits (an issue's, OutsideWork.DocRel): the pod
// gets it at the same path for its agent, and its result holds none of
// it (TestIssueDocInThePod's property, proved here by the same pod).
func TestHappyPath(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	d := c.driver(c.cfg)
	a := c.attempt(1, `cat .claudopilot/issue-7.md && git add -A && `+doneAgent)
	a.Docs = map[string][]byte{".claudopilot/issue-7.md": []byte("# Issue 7: the parser drops the last line\n")}
	b := start(context.Background(), d, a)
	j := <-c.jobs
	if want := JobName(c.repo, "p1", "worker", 1); j.Name != want {
		t.Fatalf("the Job is named %s, want %s", j.Name, want)
	}
	checkJob(t, j)
	_, code := c.runPod(j, j.Name+"-a")
	if code != 0 {
		t.Fatalf("the agent exited %d", code)
	}
	c.endJob(j.Name, batchv1.JobComplete, "Completed")
	res := <-b.res
	if res.Reason != "" || res.ExitCode != 0 || res.Err != nil {
		t.Fatalf("result %+v", res)
	}
	remote := run(t, c.remote, "git", "rev-parse", "refs/heads/"+AttemptPrefix+j.Name)
	if res.Tip != remote || res.Claimed != remote {
		t.Fatalf("tip %s (claimed %s), the remote's branch %s", res.Tip, res.Claimed, remote)
	}
	files := run(t, c.repo, "git", "ls-tree", "-r", "--name-only", res.Tip)
	if !strings.Contains(files, "phases/DONE_p1.md") || strings.Contains(files, "issue-7") {
		t.Fatalf("the result holds %s (want DONE_p1.md, never the doc)", files)
	}
	for _, want := range []string{"agent: working on p1", "do phase p1", "agent: done", "the parser drops the last line"} {
		if !strings.Contains(b.out.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, b.out.String())
		}
	}
	// Done takes the Job and the refs away.
	if err := d.Done(context.Background(), res.Job); err != nil {
		t.Fatal(err)
	}
	if c.job(j.Name) != nil {
		t.Error("the Job is still there after Done")
	}
	if refs := run(t, c.remote, "git", "for-each-ref"); refs != "" {
		t.Errorf("the remote keeps %s", refs)
	}
}

// checkJob: what the issue asks of every Job.
func checkJob(t *testing.T, j *batchv1.Job) {
	t.Helper()
	if j.Spec.BackoffLimit == nil || *j.Spec.BackoffLimit != 0 {
		t.Error("backoffLimit is not 0")
	}
	for _, l := range []string{LabelRepository, LabelPhase, LabelAttempt, LabelInstance, LabelRole} {
		if j.Labels[l] == "" || j.Spec.Template.Labels[l] == "" {
			t.Errorf("label %s missing", l)
		}
	}
	ps := j.Spec.Template.Spec
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
		t.Error("the pod would get Kubernetes API credentials")
	}
	if len(ps.InitContainers) != 1 || len(ps.Containers) != 1 {
		t.Fatalf("containers: %d init, %d", len(ps.InitContainers), len(ps.Containers))
	}
	if ps.Containers[0].EnvFrom[0].SecretRef.Name != "agent-credentials" || ps.InitContainers[0].EnvFrom != nil {
		t.Error("the agent's credentials are not (only) in the agent container")
	}
	for _, e := range ps.Containers[0].Env {
		if e.Name == "PATH" || e.Name == "GITHUB_TOKEN" {
			t.Errorf("the driver's %s went to the pod", e.Name)
		}
	}
	r := j.Spec.PodFailurePolicy.Rules[0]
	if r.Action != batchv1.PodFailurePolicyActionIgnore || r.OnPodConditions[0].Type != corev1.DisruptionTarget {
		t.Errorf("an eviction is not ignored: %+v", r)
	}
}

func TestAgentTimeoutIsTheDeadline(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	cfg := c.cfg
	cfg.AgentTimeout = 90 * time.Minute
	d := c.driver(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	b := start(ctx, d, c.attempt(1, doneAgent))
	j := <-c.jobs
	if j.Spec.ActiveDeadlineSeconds == nil || *j.Spec.ActiveDeadlineSeconds != 5400 {
		t.Fatalf("activeDeadlineSeconds %v", j.Spec.ActiveDeadlineSeconds)
	}
	c.endJob(j.Name, batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded)
	res := <-b.res
	cancel()
	if res.Reason != proc.ReasonTimeout {
		t.Fatalf("result %+v", res)
	}
}

func TestEvictionIsNoAttempt(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	d := c.driver(c.cfg)
	b := start(context.Background(), d, c.attempt(1, doneAgent))
	j := <-c.jobs
	p := c.createPod(j, j.Name+"-a", nil)
	w := c.logs.give(p.Name)
	p = c.updatePod(p, runningAgent)
	w.Write([]byte("agent: first pod\n"))
	c.updatePod(p, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"})
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 143}}
	})
	w.Close()
	// The Job controller makes a new pod (its failure policy ignores
	// the eviction); it runs to the end.
	if _, code := c.runPodWith(j, j.Name+"-b", c.fakeKubelet); code != 0 {
		t.Fatalf("the agent exited %d", code)
	}
	c.endJob(j.Name, batchv1.JobComplete, "Completed")
	res := <-b.res
	if res.Reason != "" || res.ExitCode != 0 || res.Tip == "" || res.Evictions != 1 {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(b.out.String(), "was evicted (EvictionByEvictionAPI") || !strings.Contains(b.out.String(), "agent: done") {
		t.Fatalf("log:\n%s", b.out.String())
	}
}

func TestOOMKilled(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	d := c.driver(c.cfg)
	b := start(context.Background(), d, c.attempt(1, doneAgent))
	j := <-c.jobs
	p := c.createPod(j, j.Name+"-a", nil)
	w := c.logs.give(p.Name)
	p = c.updatePod(p, runningAgent)
	w.Close()
	c.updatePod(p, agentEnded(137, "OOMKilled", ""))
	c.endJob(j.Name, batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded)
	res := <-b.res
	if res.Reason != ReasonOOM || res.ExitCode != 137 {
		t.Fatalf("result %+v", res)
	}
}

func TestPendingTooLong(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	d := c.driver(c.cfg)
	b := start(context.Background(), d, c.attempt(1, doneAgent))
	j := <-c.jobs
	c.createPod(j, j.Name+"-a", func(p *corev1.Pod) {
		// Made long before the clock's now (the API server's time).
		p.CreationTimestamp = metav1.NewTime(c.clock.Now().Add(-2 * time.Minute))
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient memory."}}
	})
	res := <-b.res
	if res.Reason != ReasonUnschedulable || !strings.Contains(res.Err.Error(), "Insufficient memory") {
		t.Fatalf("result %+v", res)
	}
	checkDeletedForeground(t, c, j.Name)
}

// TestPendingClock: a pod that waits is ended by the clock alone, with
// no event of the cluster's (the driver's ticker).
func TestPendingClock(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	d := c.driver(c.cfg)
	b := start(context.Background(), d, c.attempt(1, doneAgent))
	j := <-c.jobs
	p := c.createPod(j, j.Name+"-a", nil)
	tk := <-c.clock.tickers
	// Stepped before the pod reached the driver's cache, the clock ends
	// the attempt as "no pod was made" (1 in 6 at load 13).
	c.cached(d, p.Name)
	c.clock.Step(2 * time.Minute) // past K8S_PENDING_SECONDS (1 minute)
	for {
		select {
		case tk.c <- c.clock.Now():
		case res := <-b.res:
			if res.Reason != ReasonUnschedulable || !strings.Contains(res.Err.Error(), "still Pending") {
				t.Fatalf("result %+v", res)
			}
			return
		}
	}
}

// cached waits until the driver's cache (its informer) holds the pod:
// what its clock rules read then is that pod. An informer replays what
// it holds to a handler added late, so the pod cannot be missed.
func (c *cluster) cached(d *Driver, name string) {
	c.t.Helper()
	ch := make(chan struct{}, 1)
	signal := func(o any) {
		if p, ok := o.(*corev1.Pod); ok && p.Name == name {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	reg, err := d.informers[1].AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: signal, UpdateFunc: func(_, o any) { signal(o) }})
	if err != nil {
		c.t.Fatal(err)
	}
	defer d.informers[1].RemoveEventHandler(reg)
	<-ch
}

func checkDeletedForeground(t *testing.T, c *cluster, name string) {
	t.Helper()
	for _, a := range c.api.Calls() {
		if a.Verb == "delete" && a.Resource == "jobs" && a.Name == name {
			if p := a.Delete.PropagationPolicy; p == nil || *p != metav1.DeletePropagationForeground {
				t.Fatalf("deleted with propagation %v", p)
			}
			return
		}
	}
	t.Fatalf("the Job %s was not deleted", name)
}

func TestCancellationDeletesTheJob(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	d := c.driver(c.cfg)
	ctx, cancel := context.WithCancelCause(context.Background())
	b := start(ctx, d, c.attempt(1, doneAgent))
	j := <-c.jobs
	p := c.createPod(j, j.Name+"-a", nil)
	w := c.logs.give(p.Name)
	c.updatePod(p, runningAgent)
	w.Write([]byte("agent: running\n"))
	cancel(errors.New("drain"))
	res := <-b.res
	w.Close()
	if res.Reason != proc.ReasonCanceled {
		t.Fatalf("result %+v", res)
	}
	checkDeletedForeground(t, c, j.Name)
}

// TestDroppedLogReopened: the log stream of a running agent drops (the
// API server or the network cut it); on its next tick the driver opens
// it again from its last output, and the attempt's log holds both parts.
func TestDroppedLogReopened(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	d := c.driver(c.cfg)
	b := start(context.Background(), d, c.attempt(1, doneAgent))
	j := <-c.jobs
	p := c.createPod(j, j.Name+"-a", nil)
	w1 := c.logs.give(p.Name)
	p = c.updatePod(p, runningAgent)
	fmt.Fprintln(w1, "agent: before the drop") // read: the stream is open
	w2 := c.logs.give(p.Name)
	w1.Close()
	wrote := make(chan struct{})
	go func() { fmt.Fprintln(w2, "agent: after the drop"); close(wrote) }()
	// Each tick is taken by the driver's loop: until it saw the stream
	// end, a tick opens nothing; the first after opens it again.
	tk := <-c.clock.tickers
	for done := false; !done; {
		select {
		case tk.c <- c.clock.Now():
		case <-wrote:
			done = true
		case res := <-b.res:
			t.Fatalf("ended before the log was opened again: %+v", res)
		}
	}
	w2.Close()
	c.updatePod(p, agentEnded(0, "", `{"exit":0,"tip":"","pushed":false}`))
	c.endJob(j.Name, batchv1.JobComplete, "Completed")
	<-b.res
	out := b.out.String()
	if !strings.Contains(out, "before the drop") || !strings.Contains(out, "after the drop") {
		t.Fatalf("log:\n%s", out)
	}
	var logs []apiCall
	for _, a := range c.api.Calls() {
		if a.Verb == "log" {
			logs = append(logs, a)
		}
	}
	if len(logs) < 2 || logs[0].Since != "" || logs[1].Since == "" {
		t.Fatalf("log streams opened: %+v (the second from the last output, sinceTime set)", logs)
	}
}

// TestAdoptAfterDriverKill: a driver dies while its attempt's Job runs
// (it leaves the Job, as a kill does). The next driver's resumed attempt
// adopts that Job, follows it to its end and takes its result; a Job of
// an older attempt is an orphan and is deleted.
func TestAdoptAfterDriverKill(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	first, err := New(c.cfg, c.api.api(), c.git, WithClock(c.clock))
	if err != nil {
		t.Fatal(err)
	}
	// The dead driver's launches, without its watch: attempt 1 (long
	// over) and attempt 2 (running when it died).
	for n := 1; n <= 2; n++ {
		if err := first.launch(context.Background(), c.attempt(n, doneAgent), JobName(c.repo, "p1", "worker", n)); err != nil {
			t.Fatal(err)
		}
	}
	old, running := <-c.jobs, <-c.jobs
	p := c.createPod(running, running.Name+"-a", nil)
	w := c.logs.give(p.Name)
	p = c.updatePod(p, runningAgent)

	d := c.driver(c.cfg)
	a := c.attempt(3, doneAgent)
	a.Resume = true
	b := start(context.Background(), d, a)
	code, msg := c.fakeKubelet(p, w)
	w.Close()
	c.updatePod(p, agentEnded(code, "", msg))
	c.endJob(running.Name, batchv1.JobComplete, "Completed")
	res := <-b.res
	if !res.Adopted || res.Job != running.Name || res.Reason != "" || res.Tip == "" {
		t.Fatalf("result %+v", res)
	}
	select {
	case j := <-c.jobs:
		t.Fatalf("a new Job %s was made beside the running one", j.Name)
	default:
	}
	checkDeletedForeground(t, c, old.Name)
	if !strings.Contains(b.out.String(), "adopting the Job "+running.Name) {
		t.Fatalf("log:\n%s", b.out.String())
	}
}

// TestSweepAtStart: a killed driver left Jobs of three phases; only p1
// has an attempt in flight (the resumed attempt adopts it). At the next
// start, the Jobs of p2 (running) and p3 (finished) are orphans: deleted
// with foreground propagation, their refs on the remote with them.
func TestSweepAtStart(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	first := c.newDriver(c.cfg)
	names := map[string]string{}
	for _, ph := range []string{"p1", "p2", "p3"} {
		a := c.attempt(1, doneAgent)
		a.Phase = ph
		names[ph] = JobName(c.repo, ph, "worker", 1)
		if err := first.launch(context.Background(), a, names[ph]); err != nil {
			t.Fatal(err)
		}
		<-c.jobs
	}
	c.endJob(names["p3"], batchv1.JobComplete, "Completed")
	d := c.driver(c.cfg)
	deleted, err := d.Sweep(context.Background(), func(phase string) bool { return phase == "p1" })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{names["p2"], names["p3"]}
	if names["p3"] < names["p2"] {
		want[0], want[1] = want[1], want[0]
	}
	if strings.Join(deleted, " ") != strings.Join(want, " ") {
		t.Fatalf("deleted %v, want %v", deleted, want)
	}
	checkDeletedForeground(t, c, names["p2"])
	checkDeletedForeground(t, c, names["p3"])
	if c.job(names["p1"]) == nil {
		t.Fatal("the Job of the attempt in flight was deleted")
	}
	refs := run(t, c.remote, "git", "for-each-ref", "--format=%(refname)")
	if strings.Contains(refs, names["p2"]) || strings.Contains(refs, names["p3"]) || !strings.Contains(refs, names["p1"]) {
		t.Fatalf("refs on the remote:\n%s", refs)
	}
}

// TestCollectFinishedAfterDriverKill: the Job ended while no driver ran;
// the resumed attempt collects it at once.
func TestCollectFinishedAfterDriverKill(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	first, err := New(c.cfg, c.api.api(), c.git, WithClock(c.clock))
	if err != nil {
		t.Fatal(err)
	}
	if err := first.launch(context.Background(), c.attempt(1, doneAgent), JobName(c.repo, "p1", "worker", 1)); err != nil {
		t.Fatal(err)
	}
	j := <-c.jobs
	p := c.createPod(j, j.Name+"-a", nil)
	var out bytes.Buffer
	code, msg := c.fakeKubelet(p, &out)
	c.updatePod(p, agentEnded(code, "", msg))
	c.endJob(j.Name, batchv1.JobComplete, "Completed")

	d := c.driver(c.cfg)
	a := c.attempt(2, doneAgent)
	a.Resume = true
	res := d.Run(context.Background(), a, &bytes.Buffer{})
	if !res.Adopted || res.Job != j.Name || res.Reason != "" || res.Tip == "" {
		t.Fatalf("result %+v", res)
	}
}

// TestTheBranchCountsNotTheWord: a pod whose termination message names
// another commit than the one it pushed; the driver takes the branch.
func TestTheBranchCountsNotTheWord(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	d := c.driver(c.cfg)
	b := start(context.Background(), d, c.attempt(1, doneAgent))
	j := <-c.jobs
	p := c.createPod(j, j.Name+"-a", nil)
	w := c.logs.give(p.Name)
	p = c.updatePod(p, runningAgent)
	code, _ := c.fakeKubelet(p, w)
	w.Close()
	lie := `{"exit":0,"tip":"0123456789012345678901234567890123456789","pushed":true}`
	c.updatePod(p, agentEnded(code, "", lie))
	c.endJob(j.Name, batchv1.JobComplete, "Completed")
	res := <-b.res
	remote := run(t, c.remote, "git", "rev-parse", "refs/heads/"+AttemptPrefix+j.Name)
	if res.Tip != remote || !strings.Contains(b.out.String(), "which is what counts") {
		t.Fatalf("result %+v\n%s", res, b.out.String())
	}
}

func TestJobNames(t *testing.T) {
	t.Parallel()
	a := JobName("/r", "p1", "worker", 1)
	if a != JobName("/r", "p1", "worker", 1) {
		t.Fatal("the same attempt got two names")
	}
	seen := map[string]bool{}
	for _, n := range []string{a, JobName("/s", "p1", "worker", 1), JobName("/r", "p1", "supervisor", 1), JobName("/r", "p1", "worker", 2), JobName("/r", "P1", "worker", 1), JobName("/r", strings.Repeat("long-phase-name/", 20), "worker", 12)} {
		if seen[n] || len(n) > 63 || strings.Trim(n, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			t.Errorf("bad or repeated name %q", n)
		}
		seen[n] = true
	}
}

// TestProbe: doctor's check of the cluster. It lists Jobs through the
// kubeconfig's server; a bad K8S_MEMORY, a missing kubeconfig and a
// server that does not answer are each a clear error.
func TestProbe(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	conf := func(server string) {
		os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "+server+
			"\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\nusers:\n- name: u\n  user:\n    token: t\n"), 0o600)
	}
	conf(c.api.srv.URL)
	ctx := context.Background()
	if err := Probe(ctx, c.cfg, kc, ""); err != nil {
		t.Fatal(err)
	}
	if calls := c.api.Calls(); len(calls) != 1 || calls[0].Verb != "list" || calls[0].Resource != "jobs" {
		t.Fatalf("calls %+v", calls)
	}
	bad := c.cfg
	bad.Memory = "2GB"
	if err := Probe(ctx, bad, kc, ""); err == nil || !strings.Contains(err.Error(), "K8S_MEMORY") {
		t.Errorf("K8S_MEMORY=2GB: %v", err)
	}
	if err := Probe(ctx, c.cfg, filepath.Join(t.TempDir(), "none"), ""); err == nil || !strings.Contains(err.Error(), "K8S_KUBECONFIG") {
		t.Errorf("no kubeconfig: %v", err)
	}
	conf("http://127.0.0.1:1")
	if err := Probe(ctx, c.cfg, kc, ""); err == nil || !strings.Contains(err.Error(), "list Jobs in namespace "+ns) {
		t.Errorf("no server: %v", err)
	}
}

// TestSessionVolume: with K8S_SESSION_CLAIM the agent's home is a folder
// of the claim per repository and phase, mounted by every attempt of the
// phase: what the CLI keeps there (its sessions) is there for the next
// attempt, and another phase's is not. Two attempts of p1 run; p2's Job
// is only made (the test's kubelet maps a claim's subPath to a folder of
// its own, so another subPath is another folder: running p2's pod proved
// nothing more, for about 30 processes). By default the pods are
// fakeKubelet's: the driver's part is the Job's spec (the claim, the
// mounts, HOME); under CLAUDOPILOT_SOAK=1 the containers run for real.
func TestSessionVolume(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	cfg := c.cfg
	cfg.SessionClaim = "agent-sessions"
	d := c.driver(cfg)
	const agent = `cat "$HOME/sessions" 2>/dev/null; echo "session of attempt $CLAUDOPILOT_ATTEMPT" >> "$HOME/sessions"`
	var subs []string
	agentSub := func(j *batchv1.Job) {
		t.Helper()
		vols := j.Spec.Template.Spec.Volumes
		if v := vols[len(vols)-1]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "agent-sessions" {
			t.Fatalf("volumes %+v", vols)
		}
		for _, ctr := range append(j.Spec.Template.Spec.InitContainers, j.Spec.Template.Spec.Containers...) {
			m := ctr.VolumeMounts[len(ctr.VolumeMounts)-1]
			if m.MountPath != homeDir || m.SubPath == "" {
				t.Fatalf("%s mounts %+v", ctr.Name, ctr.VolumeMounts)
			}
			// The agent's HOME is the mount: its CLI keeps its
			// sessions there.
			if !slices.Contains(ctr.Env, corev1.EnvVar{Name: "HOME", Value: homeDir}) {
				t.Fatalf("%s's HOME is not %s: %+v", ctr.Name, homeDir, ctr.Env)
			}
			if ctr.Name == agentName {
				subs = append(subs, m.SubPath)
			}
		}
	}
	// The containers run for real under CLAUDOPILOT_SOAK=1 (the second
	// attempt's agent reads what the first left in $HOME); by default the
	// pods' results are imported (fakeKubelet): the Job's spec above is
	// the driver's part, the claim's folder staying put Kubernetes'.
	kubelet := c.fakeKubelet
	if os.Getenv("CLAUDOPILOT_SOAK") == "1" {
		kubelet = c.kubelet
	}
	for n := range 2 {
		a := c.attempt(n+1, agent)
		a.Env = append(a.Env, "CLAUDOPILOT_ATTEMPT="+strconv.Itoa(n+1))
		b := start(context.Background(), d, a)
		j := <-c.jobs
		agentSub(j)
		c.runPodWith(j, j.Name+"-a", kubelet)
		c.endJob(j.Name, batchv1.JobComplete, "Completed")
		res := <-b.res
		out := b.out.String()
		if os.Getenv("CLAUDOPILOT_SOAK") == "1" && n == 1 && !strings.Contains(out, "session of attempt 1") {
			t.Fatalf("the second attempt of p1 did not find the first one's session:\n%s", out)
		}
		if res.Reason != "" {
			t.Fatalf("result %+v", res)
		}
		d.Done(context.Background(), res.Job)
	}
	a := c.attempt(3, agent)
	a.Phase = "p2"
	j, err := d.job(a, JobName(c.repo, "p2", "worker", 3))
	if err != nil {
		t.Fatal(err)
	}
	agentSub(j)
	if subs[0] != subs[1] || subs[0] == subs[2] {
		t.Fatalf("session folders %v: one per phase", subs)
	}
}

// TestIssueDocInThePod: in queue mode the driver writes the issue's doc
// into the worktree and never commits it (OutsideWork.DocRel). The pod
// gets it at the same path for its agent, and its result holds none of
// it.
func TestIssueDocInThePod(t *testing.T) {
	if os.Getenv("CLAUDOPILOT_SOAK") != "1" {
		t.Skip("CLAUDOPILOT_SOAK=1 only; TestHappyPath's pod gets a doc the same way, reads it and its result holds none of it")
	}
	t.Parallel()
	c := newCluster(t)
	d := c.driver(c.cfg)
	a := c.attempt(1, `cat .claudopilot/issue-7.md && echo fixed > fix.txt && git add -A && git commit -qm "fix #7"`)
	a.Phase = "issue-7"
	a.Docs = map[string][]byte{".claudopilot/issue-7.md": []byte("# Issue 7: the parser drops the last line\n")}
	b := start(context.Background(), d, a)
	j := <-c.jobs
	var log bytes.Buffer
	p := c.createPod(j, j.Name+"-a", nil)
	code, msg := c.kubelet(p, &log)
	c.updatePod(p, agentEnded(code, "", msg))
	c.endJob(j.Name, batchv1.JobComplete, "Completed")
	res := <-b.res
	if code != 0 || !strings.Contains(log.String(), "the parser drops the last line") || res.Reason != "" || res.Tip == "" {
		t.Fatalf("exit %d, result %+v:\n%s", code, res, log.String())
	}
	if files := run(t, c.repo, "git", "ls-tree", "-r", "--name-only", res.Tip); strings.Contains(files, "issue-7") || !strings.Contains(files, "fix.txt") {
		t.Fatalf("the result's files:\n%s", files)
	}
}

// TestFetchRefusesAMovedRef: the fetch container's one fetch and one
// rev-parse check every ref the driver pushed against the id it named:
// a start ref that moved on the remote ends the container before the
// checkout (a remote that moved is no start). Run as sh -c initScript
// with the environment the pod would get. TestPodResolvesAConflict's pod
// passes the same check with a base, a start and a merge as named.
func TestFetchRefusesAMovedRef(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	remote := filepath.Join(dir, "remote.git")
	run(t, dir, "git", "init", "-q", "--bare", remote)
	job := "cp-p1-w2-0123abcd"
	ids := gittest.Import(t, os.Environ(), remote,
		gittest.Commit{Ref: basePrefix + job, Message: "base\n", Files: map[string]string{"a": "a\n"}},
		gittest.Commit{Ref: startPrefix + job, Message: "start\n", Files: map[string]string{"a": "b\n"}})
	initPod := func(name, startSHA string) (int, string) { // a pod whose worktree is dir/name
		cmd := exec.Command("/bin/sh", "-c", initScript)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CLAUDOPILOT_WORKTREE="+filepath.Join(dir, name), "CLAUDOPILOT_REMOTE="+remote, "CLAUDOPILOT_JOB="+job,
			"CLAUDOPILOT_BASE=main", "CLAUDOPILOT_BASE_SHA="+ids[0], "CLAUDOPILOT_START_SHA="+startSHA, "CLAUDOPILOT_MERGE_SHA=",
			"CLAUDOPILOT_BRANCH=auto/p1", "CLAUDOPILOT_DOCS=0", "HOME="+filepath.Join(dir, "home"))
		out, err := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), fmt.Sprintf("%v: %s", err, out)
	}
	if code, out := initPod("moved", ids[0]); code == 0 {
		t.Fatalf("the fetch container took a start ref that is not the named commit: %s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "moved", "a")); err == nil {
		t.Error("the moved start was checked out")
	}
}
