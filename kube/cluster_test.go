package kube

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/claudopilot/claudopilot/internal/gittest"
	"github.com/claudopilot/claudopilot/worktree"
)

// cluster is a fake cluster for one test: a fake API server (no Job
// controller, no kubelet: the test plays both), a log feed, a fake
// clock, a repository and a bare repository as K8S_REMOTE.
type cluster struct {
	t      testing.TB
	api    *apiServer
	logs   *feed
	clock  *tickClock
	repo   string
	remote string
	git    *worktree.Client
	jobs   chan *batchv1.Job // each Job created, as created
	cfg    Config
	claims string // the PersistentVolumeClaims' folders
	main   string // main's tip as the template left it
}

const ns = "agents"

// TestMain sets git's environment for the whole test binary: the
// driver's git calls and the fake kubelet's containers inherit it. Set
// per test (t.Setenv), it kept every test from running in parallel, and
// the package's wall time was the sum of its tests' (39.6 s for 17 s of
// CPU in the quiet suite at 54960ac). Its global configuration turns off
// git's automatic housekeeping where the environment cannot: in the pod
// (whose GIT_CONFIG_COUNT replaces the test's) and in the remote's
// receive-pack (a local push drops GIT_CONFIG_COUNT): a `gc --auto` a
// push and a `maintenance run --auto` a commit or fetch, ~9 ms of CPU each.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kube-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	global := filepath.Join(dir, "gitconfig")
	if err := os.WriteFile(global, []byte("[maintenance]\n\tauto = false\n[gc]\n\tauto = 0\n[receive]\n\tautogc = false\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	templates = gittest.NewTemplates(filepath.Join(dir, "templates"))
	env := append([]string{"GIT_CONFIG_GLOBAL=" + global, "GIT_CONFIG_NOSYSTEM=1"}, gittest.NoAutoMaintenance()...)
	for _, k := range []string{"GIT_AUTHOR", "GIT_COMMITTER"} {
		env = append(env, k+"_NAME=Test", k+"_EMAIL=test@example.com")
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// templates holds the clusters' repositories and remotes, made once per
// test binary and copied for each test (4 git processes a test before).
var templates *gittest.Templates

func newCluster(t testing.TB) *cluster {
	t.Helper()
	return newClusterWith(t, "", nil)
}

// newClusterWith is newCluster whose repository has, after the commit
// "start" (phases/p1.md), the commits add makes in it (nil: none). key
// names add: the repository is made once per test binary and copied.
func newClusterWith(t testing.TB, key string, add func(repo string) error) *cluster {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "c")
	templates.Copy(t, key, dir, func(dir string) error { return makeCluster(dir, add) })
	c := &cluster{t: t, logs: &feed{pipes: map[string]chan io.ReadCloser{}},
		clock: &tickClock{FakeClock: clocktesting.NewFakeClock(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)), tickers: make(chan *tick, 64)},
		repo:  filepath.Join(dir, "repo"), remote: filepath.Join(dir, "remote.git"), jobs: make(chan *batchv1.Job, 256),
		claims: filepath.Join(dir, "claims")}
	start, err := os.ReadFile(filepath.Join(dir, "main"))
	if err != nil {
		t.Fatal(err)
	}
	c.main = string(start)
	git, err := worktree.Open(context.Background(), c.repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.git = git
	c.api = newAPIServer(t, c.logs, func(j *batchv1.Job) { c.jobs <- j })
	c.cfg = Config{Namespace: ns, Image: "agent:1", Remote: c.remote, Repository: c.repo, Instance: "host-1", Pending: time.Minute, Secret: "agent-credentials"}
	return c
}

// makeCluster makes a cluster's template in dir: repo (main: phases/p1.md
// committed, then add's commits), remote.git (bare, empty) and main (the
// tip of main).
func makeCluster(dir string, add func(repo string) error) error {
	repo := filepath.Join(dir, "repo")
	if err := os.MkdirAll(filepath.Join(repo, "phases"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(repo, "phases", "p1.md"), []byte("# p1\n"), 0o644); err != nil {
		return err
	}
	for _, step := range [][]string{
		{dir, "init", "-q", "-b", "main", repo},
		{dir, "init", "-q", "--bare", filepath.Join(dir, "remote.git")},
		{repo, "add", "-A"},
		{repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"},
	} {
		if _, err := gitOut(step[0], step[1:]...); err != nil {
			return err
		}
	}
	if add != nil {
		if err := add(repo); err != nil {
			return err
		}
	}
	main, err := gitOut(repo, "rev-parse", "main")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "main"), []byte(main), 0o644)
}

// gitOut runs git in dir and returns its trimmed output.
func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// tickClock is the fake clock whose tickers the test drives: each ticker
// the driver makes is handed to the test (tickers), which sends a tick
// when it wants one. A send returns once the driver has taken the tick,
// so a test waits on the driver's own loop, never spins on the clock
// (stepping a fake ticker over and over until the driver reacted cost a
// core for as long as the driver took, the longer the busier the
// machine).
type tickClock struct {
	*clocktesting.FakeClock
	tickers chan *tick
}

// tick is one ticker of the driver's: c is what it reads.
type tick struct{ c chan time.Time }

func (t *tick) C() <-chan time.Time { return t.c }
func (t *tick) Stop()               {}

func (c *tickClock) NewTicker(time.Duration) clock.Ticker {
	t := &tick{c: make(chan time.Time)}
	select {
	case c.tickers <- t:
	default: // a test that drives no ticker made many
	}
	return t
}

// driver starts a driver on the cluster; it stops with the test.
func (c *cluster) driver(cfg Config) *Driver {
	c.t.Helper()
	d := c.newDriver(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	if err := d.Start(ctx); err != nil {
		c.t.Fatal(err)
	}
	if err := d.Synced(ctx); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cancel(); d.Stop() })
	return d
}

// newDriver makes a driver on the cluster, not started.
func (c *cluster) newDriver(cfg Config) *Driver {
	c.t.Helper()
	d, err := New(cfg, c.api.api(), c.git, WithClock(c.clock))
	if err != nil {
		c.t.Fatal(err)
	}
	return d
}

func run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// attempt is attempt n of phase p1 from main's tip as newCluster made
// it (read then, not by a git process an attempt; a test that moves main
// gets a pod whose fetch container fails on the old SHA).
func (c *cluster) attempt(n int, agent string) Attempt {
	base := c.main
	return Attempt{Phase: "p1", Role: "worker", Attempt: n, Base: "main", BaseSHA: base, Branch: "auto/p1",
		Command: agent, Prompt: []byte("do phase p1\n"),
		Env: []string{"CLAUDOPILOT_PHASE=p1", "CLAUDOPILOT_ROLE=worker", "CLAUDOPILOT_BRANCH=auto/p1", "CLAUDOPILOT_BASE=main", "PATH=/driver/only", "GITHUB_TOKEN=ghp_x"}}
}

// feed hands the driver the log stream the test writes.
type feed struct {
	mu    sync.Mutex
	pipes map[string]chan io.ReadCloser
	opens int
}

func (f *feed) pipe(pod string) chan io.ReadCloser {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pipes[pod] == nil {
		f.pipes[pod] = make(chan io.ReadCloser, 4)
	}
	return f.pipes[pod]
}

// open hands over the stream the test gave for the pod; without one,
// the log of a container that ended unseen: nothing more, at once.
func (f *feed) open(ctx context.Context, pod string) io.ReadCloser {
	f.mu.Lock()
	f.opens++
	f.mu.Unlock()
	select {
	case r := <-f.pipe(pod):
		return r
	case <-ctx.Done():
		return io.NopCloser(strings.NewReader(""))
	default:
		return io.NopCloser(strings.NewReader(""))
	}
}

// give makes the pod's next log stream; the test writes it and closes it.
func (f *feed) give(pod string) *io.PipeWriter {
	r, w := io.Pipe()
	f.pipe(pod) <- r
	return w
}

// createPod is the Job controller's part: a pod of the Job, Pending.
func (c *cluster) createPod(j *batchv1.Job, name string, mutate func(*corev1.Pod)) *corev1.Pod {
	c.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: j.Spec.Template.Labels, Annotations: j.Spec.Template.Annotations, CreationTimestamp: metav1.NewTime(c.clock.Now())},
		Spec:       j.Spec.Template.Spec,
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
	if mutate != nil {
		mutate(p)
	}
	if err := c.api.Create(podsGVR, p, ns); err != nil {
		c.t.Fatal(err)
	}
	return p.DeepCopy()
}

func (c *cluster) updatePod(p *corev1.Pod, mutate func(*corev1.Pod)) *corev1.Pod {
	c.t.Helper()
	mutate(p)
	if err := c.api.Update(podsGVR, p, ns); err != nil {
		c.t.Fatal(err)
	}
	return p.DeepCopy()
}

// runningAgent is the kubelet's part: the agent container runs.
func runningAgent(p *corev1.Pod) {
	p.Status.Phase = corev1.PodRunning
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: initName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: agentName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
}

// agentEnded: the agent container ended with code and message.
func agentEnded(code int32, reason, message string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodSucceeded
		if code != 0 {
			p.Status.Phase = corev1.PodFailed
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: agentName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: message}}}}
	}
}

// endJob is the Job controller's part: the Job is over.
func (c *cluster) endJob(name string, t batchv1.JobConditionType, reason string) {
	c.t.Helper()
	j := c.job(name)
	if j == nil {
		c.t.Fatalf("no Job %s", name)
	}
	j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: reason})
	if err := c.api.Update(jobsGVR, j, ns); err != nil {
		c.t.Fatal(err)
	}
}

// kubelet runs the pod's two containers for real (sh and git on this
// machine), with the paths of the pod mapped into a folder: what the
// fetch and the agent script do to the remote is what a pod would do.
// The agent's output goes to out; it returns the agent's exit code and
// the termination message.
func (c *cluster) kubelet(p *corev1.Pod, out io.Writer) (int32, string) {
	c.t.Helper()
	root := c.t.TempDir()
	work, input := filepath.Join(root, "work"), filepath.Join(root, "input")
	os.MkdirAll(work, 0o755)
	os.MkdirAll(input, 0o755)
	for _, it := range p.Spec.Volumes[1].DownwardAPI.Items {
		key := strings.TrimSuffix(strings.TrimPrefix(it.FieldRef.FieldPath, "metadata.annotations['"), "']")
		os.WriteFile(filepath.Join(input, it.Path), []byte(p.Annotations[key]), 0o644)
	}
	// A PersistentVolumeClaim is a folder of the cluster's, shared by
	// the pods that mount it.
	home := ""
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			for _, m := range p.Spec.Containers[0].VolumeMounts {
				if m.Name == v.Name && m.MountPath == homeDir {
					home = filepath.Join(c.claims, v.PersistentVolumeClaim.ClaimName, m.SubPath)
				}
			}
		}
	}
	mapPath := func(v string) string {
		if home != "" && strings.HasPrefix(v, homeDir) {
			return home + strings.TrimPrefix(v, homeDir)
		}
		v = strings.Replace(v, inputDir, input, 1)
		v = strings.Replace(v, resultFile, filepath.Join(root, "result"), 1)
		if strings.HasPrefix(v, workDir) {
			v = work + strings.TrimPrefix(v, workDir)
		}
		return v
	}
	exec1 := func(ctr corev1.Container, stdout io.Writer) int32 {
		env := append(gittest.NoAutoMaintenance(), "PATH="+os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.Getenv("GIT_CONFIG_GLOBAL"))
		for _, e := range ctr.Env {
			env = append(env, e.Name+"="+mapPath(e.Value))
		}
		cmd := exec.Command(ctr.Command[0], ctr.Command[1:]...)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = work, env, stdout, stdout
		if err := cmd.Run(); err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				return int32(ee.ExitCode())
			}
			c.t.Fatal(err)
		}
		return 0
	}
	var initOut bytes.Buffer
	if code := exec1(p.Spec.InitContainers[0], &initOut); code != 0 {
		c.t.Fatalf("the fetch container exited %d:\n%s", code, initOut.String())
	}
	code := exec1(p.Spec.Containers[0], out)
	msg, _ := os.ReadFile(filepath.Join(root, "result"))
	return code, string(msg)
}

// fakeKubelet is kubelet without the containers: the agent's log lines
// go to out and its result is imported on the remote's attempt branch
// (phase p1 done on main's tip as newCluster left it) in one git
// process, where the real containers' init, fetch, checkout, agent,
// add and push are about 25. For the tests of what the driver does
// with a pod's life and result; TestHappyPath and
// TestPodResolvesAConflict run the real containers (and, under
// CLAUDOPILOT_SOAK=1, TestIssueDocInThePod, TestSessionVolume and
// TestPodBranchMeetsTheLocalChecks' cases).
func (c *cluster) fakeKubelet(p *corev1.Pod, out io.Writer) (int32, string) {
	c.t.Helper()
	return c.importKubelet(gittest.Commit{Message: "p1 done\n", Renames: [][2]string{{"phases/p1.md", "phases/DONE_p1.md"}}})(p, out)
}

// importKubelet is fakeKubelet whose result is commit (its Ref and From
// set here: the attempt's branch on the remote, main's tip as
// newCluster left it).
func (c *cluster) importKubelet(commit gittest.Commit) func(*corev1.Pod, io.Writer) (int32, string) {
	return func(p *corev1.Pod, out io.Writer) (int32, string) {
		c.t.Helper()
		return c.runImport(p, out, commit)
	}
}

func (c *cluster) runImport(p *corev1.Pod, out io.Writer, commit gittest.Commit) (int32, string) {
	c.t.Helper()
	job := ""
	for _, e := range p.Spec.Containers[0].Env {
		if e.Name == "CLAUDOPILOT_JOB" {
			job = e.Value
		}
	}
	if job == "" {
		c.t.Fatalf("the pod %s names no job", p.Name)
	}
	fmt.Fprintln(out, "agent: working on p1")
	commit.Ref, commit.From = AttemptPrefix+job, c.main
	tip := gittest.Import(c.t, os.Environ(), c.remote, commit)[0]
	fmt.Fprintln(out, "agent: done")
	return 0, `{"exit":0,"tip":"` + tip + `","pushed":true}`
}

// runPod is one pod's life: created, running, the containers run for
// real with the log streamed, ended as the containers did.
func (c *cluster) runPod(j *batchv1.Job, name string) (*corev1.Pod, int32) {
	return c.runPodWith(j, name, c.kubelet)
}

// runPodWith is runPod with the kubelet given (c.kubelet or c.fakeKubelet).
func (c *cluster) runPodWith(j *batchv1.Job, name string, kubelet func(*corev1.Pod, io.Writer) (int32, string)) (*corev1.Pod, int32) {
	p := c.createPod(j, name, nil)
	w := c.logs.give(name)
	p = c.updatePod(p, runningAgent)
	code, msg := kubelet(p, w)
	w.Close()
	p = c.updatePod(p, agentEnded(code, "", msg))
	return p, code
}

func mustPod(c *cluster, name string) *corev1.Pod {
	c.t.Helper()
	p, err := c.api.tracker.Get(podsGVR, ns, name)
	if err != nil {
		c.t.Fatal(err)
	}
	return p.(*corev1.Pod)
}

// job is the Job name, nil when there is none.
func (c *cluster) job(name string) *batchv1.Job {
	j, err := c.api.tracker.Get(jobsGVR, ns, name)
	if err != nil {
		return nil
	}
	return j.(*batchv1.Job)
}
