package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/claudopilot/claudopilot/worktree"
)

// Config is the K8S_* settings and the two timeouts the Job takes.
type Config struct {
	Namespace string // K8S_NAMESPACE
	Image     string // K8S_IMAGE: has sh, git and the agent's CLI
	// Remote is K8S_REMOTE: a git remote the driver pushes the attempt's
	// start to and fetches its result from, and the cluster reaches.
	Remote         string
	Secret         string // K8S_SECRET: the agent's credentials (envFrom)
	GitSecret      string // K8S_GIT_SECRET: key "token", may push claudopilot/attempt/* only
	ServiceAccount string // K8S_SERVICE_ACCOUNT: the pod's (its token is not mounted)
	RuntimeClass   string // K8S_RUNTIME_CLASS: gVisor or Kata
	CPU, Memory    string // K8S_CPU, K8S_MEMORY: requests and limits
	Pending        time.Duration
	StuckTimeout   time.Duration // STUCK_TIMEOUT: the driver's own watch
	AgentTimeout   time.Duration // AGENT_TIMEOUT: activeDeadlineSeconds
	// Repository is the repository's path and Instance the driver's
	// stable instance name: the labels this driver's Jobs carry.
	Repository, Instance string
	// MaxEvictions bounds the pods an attempt may lose to evictions
	// (DefaultMaxEvictions when 0).
	MaxEvictions int
}

// DefaultMaxEvictions: past this many evicted pods the attempt ends
// unschedulable (the cluster cannot keep one running).
const DefaultMaxEvictions = 5

// Logs follows a container's output. The API's is pods/log?follow; a
// test feeds its own (the fake clientset's answers a fixed text).
type Logs interface {
	Follow(ctx context.Context, namespace, pod, container string, since time.Time) (io.ReadCloser, error)
}

// APILogs follows logs through the API server.
type APILogs struct{ Client kubernetes.Interface }

// Follow opens pods/log?follow for the container, from since when it is
// set (a stream that dropped is opened again).
func (l APILogs) Follow(ctx context.Context, ns, pod, container string, since time.Time) (io.ReadCloser, error) {
	o := &corev1.PodLogOptions{Container: container, Follow: true}
	if !since.IsZero() {
		t := metav1.NewTime(since)
		o.SinceTime = &t
	}
	return l.Client.CoreV1().Pods(ns).GetLogs(pod, o).Stream(ctx)
}

// Driver runs attempts as Jobs. Start it once; Run from any goroutine.
type Driver struct {
	cfg    Config
	client kubernetes.Interface
	logs   Logs
	git    *worktree.Client
	clock  clock.WithTicker

	factory informers.SharedInformerFactory
	jobs    batchlisters.JobLister
	pods    corelisters.PodLister

	mu      sync.Mutex
	waiters map[string]chan struct{} // Job name -> "look again"
}

// Option changes a Driver for a test.
type Option func(*Driver)

// WithLogs replaces the API's log stream.
func WithLogs(l Logs) Option { return func(d *Driver) { d.logs = l } }

// WithClock replaces the wall clock.
func WithClock(c clock.WithTicker) Option { return func(d *Driver) { d.clock = c } }

// New makes a driver over client; git is the repository's client (it
// pushes the starts and fetches the results).
func New(cfg Config, client kubernetes.Interface, git *worktree.Client, opts ...Option) (*Driver, error) {
	if cfg.Namespace == "" || cfg.Image == "" || cfg.Remote == "" {
		return nil, errors.New("AGENT_RUNNER=kubernetes needs K8S_NAMESPACE, K8S_IMAGE and K8S_REMOTE")
	}
	if cfg.MaxEvictions <= 0 {
		cfg.MaxEvictions = DefaultMaxEvictions
	}
	d := &Driver{cfg: cfg, client: client, git: git, logs: APILogs{client}, clock: clock.RealClock{}, waiters: map[string]chan struct{}{}}
	for _, o := range opts {
		o(d)
	}
	if _, err := d.resources(); err != nil {
		return nil, err
	}
	return d, nil
}

// selector picks this driver's Jobs and pods: its repository, its
// instance.
func (d *Driver) selector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{
		LabelApp:        appName,
		LabelRepository: RepositoryLabel(d.cfg.Repository),
		LabelInstance:   clean(d.cfg.Instance, 63),
	})
}

// Start runs the informers until ctx ends (Synced waits for their first
// list). Every change of a Job or pod of this driver wakes the
// attempt it belongs to.
func (d *Driver) Start(ctx context.Context) error {
	sel := d.selector().String()
	d.factory = informers.NewSharedInformerFactoryWithOptions(d.client, 0,
		informers.WithNamespace(d.cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }))
	ji := d.factory.Batch().V1().Jobs()
	pi := d.factory.Core().V1().Pods()
	d.jobs, d.pods = ji.Lister(), pi.Lister()
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    d.wake,
		UpdateFunc: func(_, o any) { d.wake(o) },
		DeleteFunc: d.wake,
	}
	if _, err := ji.Informer().AddEventHandler(h); err != nil {
		return err
	}
	if _, err := pi.Informer().AddEventHandler(h); err != nil {
		return err
	}
	d.factory.Start(ctx.Done())
	return nil
}

// Synced waits for the watches' first list (or ctx).
func (d *Driver) Synced(ctx context.Context) error {
	for typ, ok := range d.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("kubernetes: the watch of %v did not sync: %w", typ, context.Cause(ctx))
		}
	}
	return nil
}

// Stop waits for the informers to end (their context is done).
func (d *Driver) Stop() {
	if d.factory != nil {
		d.factory.Shutdown()
	}
}

// wake tells the attempt an object belongs to to look again.
func (d *Driver) wake(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	name := m.GetLabels()[LabelJob]
	d.mu.Lock()
	ch := d.waiters[name]
	d.mu.Unlock()
	if ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// listen registers for wake-ups of Job name.
func (d *Driver) listen(name string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	d.mu.Lock()
	d.waiters[name] = ch
	d.mu.Unlock()
	return ch, func() {
		d.mu.Lock()
		if d.waiters[name] == ch {
			delete(d.waiters, name)
		}
		d.mu.Unlock()
	}
}

// phaseJobs lists this driver's Jobs of one phase, from the informer's
// cache.
func (d *Driver) phaseJobs(phase string) ([]*batchv1.Job, error) {
	sel := d.selector()
	req, err := labels.NewRequirement(LabelPhase, "=", []string{clean(phase, 63)})
	if err != nil {
		return nil, err
	}
	var out []*batchv1.Job
	js, err := d.jobs.Jobs(d.cfg.Namespace).List(sel.Add(*req))
	if err != nil {
		return nil, err
	}
	for _, j := range js {
		if j.Annotations[AnnotationPhase] == phase {
			out = append(out, j)
		}
	}
	return out, nil
}

// deleteJob deletes a Job with foreground propagation: its pods go
// first, so nothing of it runs on once the Job is gone. Not found is
// done.
func (d *Driver) deleteJob(ctx context.Context, name string) error {
	fg := metav1.DeletePropagationForeground
	err := d.client.BatchV1().Jobs(d.cfg.Namespace).Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{PropagationPolicy: &fg})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("kubernetes: delete Job %s: %w", name, err)
	}
	return nil
}

// syncTimeout bounds the first list of Jobs and pods: a cluster that
// cannot be reached is an error at start, not a hang.
const syncTimeout = 60 * time.Second

// Open connects to the cluster with kubeconfig ("" : $KUBECONFIG, else
// ~/.kube/config, else the pod's own in-cluster account) and its context
// ("" the current one), and starts the driver's watch. stop ends it.
func Open(ctx context.Context, cfg Config, kubeconfig, kcontext string, git *worktree.Client) (d *Driver, stop func(), err error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kcontext}).ClientConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes: the driver's credentials (K8S_KUBECONFIG): %w", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes: %w", err)
	}
	if d, err = New(cfg, cs, git); err != nil {
		return nil, nil, err
	}
	// The watch lives as long as the driver, past a Ctrl-C: the
	// attempts it cancels still delete their Jobs.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if err := d.Start(wctx); err != nil {
		cancel()
		return nil, nil, err
	}
	sctx, cancelSync := context.WithTimeoutCause(ctx, syncTimeout, errors.New("the cluster did not answer in time"))
	defer cancelSync()
	if err := d.Synced(sctx); err != nil {
		cancel()
		d.Stop()
		return nil, nil, fmt.Errorf("%w (namespace %s)", err, cfg.Namespace)
	}
	return d, func() { cancel(); d.Stop() }, nil
}
