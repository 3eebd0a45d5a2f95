package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/claudopilot/claudopilot/internal/syncw"
	"github.com/claudopilot/claudopilot/proc"
)

// Reasons an attempt's Job ends that only a cluster has; the others are
// proc's (stuck, timeout, canceled, start).
const (
	ReasonOOM           = "oom"
	ReasonUnschedulable = "unschedulable"
)

// maxAnnotations is what the API server takes in one object's
// annotations (256 KiB), less room for the rest.
const maxAnnotations = 240 << 10

// Result is how an attempt's Job ended.
type Result struct {
	Job      string // the Job's name: an adopted Job keeps its own
	Adopted  bool   // a Job of an earlier attempt was followed to its end
	ExitCode int    // the agent's exit code; -1 unknown
	// Reason is "" when the agent ran to its end (see ExitCode), else
	// proc's stuck, timeout, canceled or start, or ReasonOOM or
	// ReasonUnschedulable.
	Reason string
	Err    error  // explains a Reason, or a result that could not be read
	Tip    string // the result commit fetched from the remote; "" none
	// Claimed is the tip the pod's termination message named: shown
	// when it differs from Tip, never used.
	Claimed   string
	Evictions int
	Tail      []string // set by the caller's log sink, for Classify
}

// podResult is the agent container's termination message.
type podResult struct {
	Exit   int    `json:"exit"`
	Tip    string `json:"tip"`
	Pushed bool   `json:"pushed"`
}

// Run runs attempt a as a Job (or follows the Job an earlier driver left
// for it) to its end. The agent's output goes to out. It returns once the
// Job has ended or been deleted; the Job itself stays until Done, so a
// driver that dies before it has taken the result finds it again.
func (d *Driver) Run(ctx context.Context, a Attempt, out io.Writer) Result {
	name := JobName(d.cfg.Repository, a.Phase, a.Role, a.Attempt)
	res := Result{Job: name, ExitCode: -1}
	w := &follower{d: d, out: syncw.New(out), streamed: map[string]bool{}, ended: map[string]bool{}, evicted: map[string]bool{}, done: make(chan string, 8)}
	adopt, err := d.settle(ctx, a, name, w)
	if err != nil {
		res.Reason, res.Err = proc.ReasonStart, err
		return res
	}
	if adopt != "" {
		res.Job, res.Adopted = adopt, true
		w.note("adopting the Job %s an earlier driver left running for this phase", adopt)
	} else if err := d.launch(ctx, a, name); err != nil {
		res.Reason, res.Err = proc.ReasonStart, err
		return res
	}
	w.name, w.created = res.Job, d.clock.Now()
	return w.wait(ctx, res)
}

// settle deletes the Jobs an earlier attempt of the phase left (orphans
// of a dead attempt) and, when a is a resumed attempt, returns the
// newest of its role to adopt instead of starting anew.
func (d *Driver) settle(ctx context.Context, a Attempt, name string, w *follower) (adopt string, err error) {
	js, err := d.phaseJobs(a.Phase)
	if err != nil {
		return "", err
	}
	sort.Slice(js, func(i, k int) bool { return attemptOf(js[i]) > attemptOf(js[k]) })
	if a.Resume {
		for _, j := range js {
			if j.Name != name && j.Labels[LabelRole] == clean(a.Role, 63) && j.DeletionTimestamp == nil {
				adopt = j.Name
				break
			}
		}
	}
	for _, j := range js {
		if j.Name == name || j.Name == adopt {
			continue
		}
		w.note("deleting the Job %s an earlier attempt of this phase left", j.Name)
		if err := d.deleteJob(ctx, j.Name); err != nil {
			return "", err
		}
	}
	return adopt, nil
}

// Sweep deletes, once the watch has synced at start, this driver's Jobs
// of the phases no attempt is in flight for (inFlight says which: the
// attempts a killed driver left, which the resumed ones adopt or
// collect). What is left of the others is an orphan: a Job whose result
// was taken but whose deletion failed, or one of a phase that will not
// run again. Their refs on the remote go with them. It returns the Jobs
// deleted.
func (d *Driver) Sweep(ctx context.Context, inFlight func(phase string) bool) ([]string, error) {
	js, err := d.jobs.Jobs(d.cfg.Namespace).List(d.selector())
	if err != nil {
		return nil, err
	}
	var deleted []string
	var errs []error
	for _, j := range js {
		if j.DeletionTimestamp != nil || inFlight(j.Annotations[AnnotationPhase]) {
			continue
		}
		if err := d.Done(ctx, j.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, j.Name)
	}
	sort.Strings(deleted)
	return deleted, errors.Join(errs...)
}

func attemptOf(j *batchv1.Job) int {
	n, _ := strconv.Atoi(j.Labels[LabelAttempt])
	return n
}

// launch pushes the attempt's start to the remote and creates its Job. A
// Job of that name already there is this attempt's: it is followed.
func (d *Driver) launch(ctx context.Context, a Attempt, name string) error {
	job, err := d.job(a, name)
	if err != nil {
		return err
	}
	size := 0
	for _, v := range job.Spec.Template.Annotations {
		size += len(v)
	}
	if size > maxAnnotations {
		return fmt.Errorf("kubernetes: the prompt and the files it names are %d KiB; a pod's annotations hold %d KiB", size>>10, maxAnnotations>>10)
	}
	refs := []string{a.BaseSHA + ":refs/heads/" + basePrefix + name}
	if a.Start != "" {
		refs = append(refs, a.Start+":refs/heads/"+startPrefix+name)
	}
	if a.Merge != "" {
		refs = append(refs, a.Merge+":refs/heads/"+mergePrefix+name)
	}
	if _, err := d.git.Git(ctx, append([]string{"-c", "core.hooksPath=/dev/null", "push", "--quiet", "--force", d.cfg.Remote}, refs...)...); err != nil {
		return fmt.Errorf("kubernetes: push the attempt's start to K8S_REMOTE: %w", err)
	}
	err = d.client.CreateJob(ctx, job)
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kubernetes: create Job %s: %w", name, err)
	}
	return nil
}

// Done removes what the attempt left once its result is taken: the Job
// (its pods with it), the refs on the remote and the fetched ref.
func (d *Driver) Done(ctx context.Context, job string) error {
	ctx = context.WithoutCancel(ctx)
	err := d.deleteJob(ctx, job)
	// One push deletes the four; one that is not there (no start, no
	// merge, no result) fails alone, and is no failure.
	d.git.Git(ctx, "-c", "core.hooksPath=/dev/null", "push", "--quiet", d.cfg.Remote,
		":refs/heads/"+basePrefix+job, ":refs/heads/"+startPrefix+job, ":refs/heads/"+mergePrefix+job, ":refs/heads/"+AttemptPrefix+job)
	if _, lerr := d.git.Git(ctx, "update-ref", "-d", localRef(job)); lerr != nil {
		err = errors.Join(err, lerr)
	}
	return err
}

func localRef(job string) string { return "refs/claudopilot/attempt/" + job }

// follower follows one Job to its end.
type follower struct {
	d        *Driver
	name     string
	out      *syncw.Writer
	created  time.Time
	seen     bool            // the Job was in the cache once
	streamed map[string]bool // pods whose log is (or was) followed
	ended    map[string]bool // pods whose log stream ended
	evicted  map[string]bool
	active   int         // log streams running
	done     chan string // a log stream ended
	last     atomic.Int64
}

// note writes one line of the driver's into the attempt's log.
func (w *follower) note(format string, args ...any) {
	fmt.Fprintf(w.out, "\n=== claudopilot: kubernetes: %s\n", fmt.Sprintf(format, args...))
}

// wait follows the Job until it ends, ctx ends, or a rule of the
// driver's ends it.
func (w *follower) wait(ctx context.Context, res Result) Result {
	wake, stop := w.d.listen(w.name)
	defer stop()
	sctx, cancelStreams := context.WithCancel(ctx)
	defer cancelStreams()
	var tick <-chan time.Time
	if p := w.period(); p > 0 {
		t := w.d.clock.NewTicker(p)
		defer t.Stop()
		tick = t.C()
	}
	ticked := false
	for {
		end, err := w.look(sctx, ticked)
		ticked = false
		if err != nil {
			res.Err = err
		}
		if end != nil {
			return w.end(ctx, cancelStreams, end, res)
		}
		select {
		case <-ctx.Done():
			res.Reason, res.Err = proc.ReasonCanceled, context.Cause(ctx)
			return w.stopJob(ctx, cancelStreams, res)
		case <-wake:
		case pod := <-w.done:
			w.active--
			w.ended[pod] = true
		case <-tick:
			ticked = true
		}
	}
}

// period is how often the clock rules are looked at.
func (w *follower) period() time.Duration {
	p := time.Duration(0)
	for _, t := range []time.Duration{w.d.cfg.Pending, w.d.cfg.StuckTimeout} {
		if t > 0 && (p == 0 || t < p) {
			p = t
		}
	}
	p /= 4
	switch {
	case p == 0:
	case p < 10*time.Millisecond:
		p = 10 * time.Millisecond
	case p > 30*time.Second:
		p = 30 * time.Second
	}
	return p
}

// ending is what look decided: the Job ended (job set), or a rule of the
// driver's ends it (reason set).
type ending struct {
	job    *batchv1.Job
	pod    *corev1.Pod
	reason string
	err    error
}

// look reads the Job and its pods from the cache: evictions are noted,
// logs followed, and the driver's rules applied. On a tick, a log stream
// that ended while its container still runs (a dropped connection) is
// opened again from its last output; not on every event, since the
// cache may not know yet that the container ended.
func (w *follower) look(ctx context.Context, tick bool) (*ending, error) {
	ns := w.d.cfg.Namespace
	job, err := w.d.jobs.Jobs(ns).Get(w.name)
	switch {
	case apierrors.IsNotFound(err) && w.seen:
		return &ending{reason: proc.ReasonStart, err: fmt.Errorf("the Job %s was deleted by someone else", w.name)}, nil
	case err != nil && !apierrors.IsNotFound(err):
		return nil, err
	}
	w.seen = w.seen || job != nil
	pods, err := w.d.pods.Pods(ns).List(labels.SelectorFromSet(labels.Set{LabelJob: w.name}))
	if err != nil {
		return nil, err
	}
	sort.Slice(pods, func(i, k int) bool { return pods[i].CreationTimestamp.Before(&pods[k].CreationTimestamp) })
	var current *corev1.Pod
	for _, p := range pods {
		if disrupted(p) {
			if !w.evicted[p.Name] {
				w.evicted[p.Name] = true
				w.note("the pod %s was evicted (%s): the Job makes a new one; no attempt is spent", p.Name, condMessage(p, corev1.DisruptionTarget))
			}
			continue
		}
		current = p
		w.follow(ctx, p, tick)
	}
	if len(w.evicted) >= w.d.cfg.MaxEvictions {
		return &ending{reason: ReasonUnschedulable, err: fmt.Errorf("%d pods of the Job were evicted", len(w.evicted))}, nil
	}
	if job != nil && finished(job) {
		if current == nil {
			// The watch of pods may be behind the watch of Jobs: the
			// API server is asked before the Job is said to have had no
			// pod.
			if current, err = w.d.lastPod(ctx, w.name); err != nil {
				return nil, err
			}
			if current != nil {
				w.follow(ctx, current, false)
			}
		}
		if c := cond(job, batchv1.JobFailed); current != nil && (c == nil || c.Reason != batchv1.JobReasonDeadlineExceeded) &&
			(current.Status.Phase == corev1.PodRunning || current.Status.Phase == corev1.PodPending) {
			// The Job's end came before its pod's (two watches): the
			// pod's is on its way.
			return nil, nil
		}
		return &ending{job: job, pod: current}, nil
	}
	return w.rules(current), nil
}

// lastPod asks the API server for the Job's newest pod that was not
// evicted; nil when it has none.
func (d *Driver) lastPod(ctx context.Context, job string) (*corev1.Pod, error) {
	l, err := d.client.ListPods(ctx, d.cfg.Namespace, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{LabelJob: job}).String()})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: list the pods of Job %s: %w", job, err)
	}
	var last *corev1.Pod
	for i := range l.Items {
		p := &l.Items[i]
		if !disrupted(p) && (last == nil || last.CreationTimestamp.Before(&p.CreationTimestamp)) {
			last = p
		}
	}
	return last, nil
}

// follow starts following the log of pod p once its agent container
// started; on a tick, again from its last output when the stream ended
// while the container still runs (a dropped connection).
func (w *follower) follow(ctx context.Context, p *corev1.Pod, tick bool) {
	since := time.Time{}
	again := tick && w.ended[p.Name] && agentRunning(p)
	if again {
		since = time.Unix(0, w.last.Load())
	}
	if started(p, agentName) && !w.streamed[p.Name] || again {
		w.streamed[p.Name], w.ended[p.Name] = true, false
		w.active++
		if !again {
			w.last.Store(w.d.clock.Now().UnixNano())
		}
		go w.stream(ctx, p.Name, since)
	}
}

// rules are the driver's own: Pending too long, silent too long.
func (w *follower) rules(pod *corev1.Pod) *ending {
	now := w.d.clock.Now()
	if lim := w.d.cfg.Pending; lim > 0 && (pod == nil || waiting(pod)) {
		// From the pod's creation (the API server's clock): a pod an
		// adopted Job made long ago has waited that long already.
		since := w.created
		if pod != nil && !pod.CreationTimestamp.IsZero() {
			since = pod.CreationTimestamp.Time
		}
		if now.Sub(since) > lim {
			why := "no pod was made"
			if pod != nil {
				why = "its pod " + pod.Name + " is still Pending"
				if m := condMessage(pod, corev1.PodScheduled); m != "" {
					why += ": " + m
				} else if m := waitingReason(pod); m != "" {
					why += ": " + m
				}
			}
			return &ending{reason: ReasonUnschedulable, err: fmt.Errorf("%s after %s (K8S_PENDING_SECONDS)", why, lim)}
		}
	}
	if lim := w.d.cfg.StuckTimeout; lim > 0 && w.active > 0 {
		if now.Sub(time.Unix(0, w.last.Load())) > lim {
			return &ending{reason: proc.ReasonStuck, err: fmt.Errorf("no output for %s", lim)}
		}
	}
	return nil
}

// end turns what look decided into the Result.
func (w *follower) end(ctx context.Context, cancelStreams func(), e *ending, res Result) Result {
	res.Evictions = len(w.evicted)
	if e.job == nil {
		res.Reason, res.Err = e.reason, e.err
		w.note("%s: %v; the Job is deleted", e.reason, e.err)
		return w.stopJob(ctx, cancelStreams, res)
	}
	// The pod ended: its log ends too. Read it to the end first.
	for w.active > 0 {
		select {
		case <-w.done:
			w.active--
		case <-ctx.Done():
			res.Reason, res.Err = proc.ReasonCanceled, context.Cause(ctx)
			return w.stopJob(ctx, cancelStreams, res)
		}
	}
	res = w.outcome(e.job, e.pod, res)
	if res.Reason == "" {
		w.fetch(ctx, &res)
	}
	return res
}

// outcome reads how the Job and its last pod ended.
func (w *follower) outcome(job *batchv1.Job, pod *corev1.Pod, res Result) Result {
	if c := cond(job, batchv1.JobFailed); c != nil && c.Reason == batchv1.JobReasonDeadlineExceeded {
		res.Reason, res.Err = proc.ReasonTimeout, errors.New(c.Message)
		return res
	}
	if pod == nil {
		res.Reason, res.Err = proc.ReasonStart, fmt.Errorf("the Job %s ended without a pod: %s", w.name, jobMessage(job))
		return res
	}
	for _, s := range pod.Status.InitContainerStatuses {
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 {
			res.Reason, res.Err = proc.ReasonStart, fmt.Errorf("the pod could not fetch the attempt's start (exit %d): %s", t.ExitCode, strings.TrimSpace(t.Message))
			return res
		}
	}
	t := terminated(pod, agentName)
	if t == nil {
		res.Reason, res.Err = proc.ReasonStart, fmt.Errorf("the Job %s ended, its agent container did not: %s", w.name, jobMessage(job))
		return res
	}
	if t.Reason == "OOMKilled" {
		res.Reason, res.ExitCode = ReasonOOM, int(t.ExitCode)
		res.Err = errors.New("the agent's container ran out of memory (OOMKilled; K8S_MEMORY)")
		w.note("the agent's container was OOMKilled")
		return res
	}
	res.ExitCode = int(t.ExitCode)
	var pr podResult
	if err := json.Unmarshal([]byte(strings.TrimSpace(t.Message)), &pr); err != nil {
		w.note("the pod's result could not be read (%v): the driver fetches the branch anyway", err)
		return res
	}
	res.ExitCode, res.Claimed = pr.Exit, pr.Tip
	if !pr.Pushed {
		w.note("the pod could not push its result")
	}
	return res
}

// fetch takes the attempt's branch from the remote into a ref of the
// driver's own: what is there is the result, whatever the pod said.
func (w *follower) fetch(ctx context.Context, res *Result) {
	ref := localRef(w.name)
	if err := w.d.git.Fetch(ctx, w.d.cfg.Remote, "+refs/heads/"+AttemptPrefix+w.name+":"+ref); err != nil {
		w.note("no result branch %s%s on K8S_REMOTE: %v", AttemptPrefix, w.name, err)
		return
	}
	tip, err := w.d.git.RevParse(ctx, ref)
	if err != nil {
		res.Err = err
		return
	}
	res.Tip = tip
	if res.Claimed != "" && res.Claimed != tip {
		w.note("the pod said its result is %s; the branch holds %s, which is what counts", res.Claimed, tip)
	}
}

// stopJob deletes the Job (foreground) and ends the log streams.
func (w *follower) stopJob(ctx context.Context, cancelStreams func(), res Result) Result {
	cancelStreams()
	if err := w.d.deleteJob(ctx, w.name); err != nil {
		res.Err = errors.Join(res.Err, err)
	}
	res.Evictions = len(w.evicted)
	return res
}

// stream follows the agent container's log into the attempt's log until
// it ends (look opens it again if the container still runs).
func (w *follower) stream(ctx context.Context, pod string, since time.Time) {
	defer func() {
		select {
		case w.done <- pod:
		case <-ctx.Done():
		}
	}()
	rc, err := w.d.follow(ctx, pod, since)
	if err != nil {
		if ctx.Err() == nil {
			w.note("the log of %s could not be followed: %v", pod, err)
		}
		return
	}
	defer rc.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := rc.Read(buf)
		if n > 0 {
			w.last.Store(w.d.clock.Now().UnixNano())
			w.out.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// agentRunning: the pod's agent container runs.
func agentRunning(p *corev1.Pod) bool {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == agentName {
			return s.State.Running != nil
		}
	}
	return false
}
