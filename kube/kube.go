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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
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
	// SessionClaim is K8S_SESSION_CLAIM: a PersistentVolumeClaim the
	// agent's home lives on, a folder per repository and phase, so the
	// CLI's session store outlives the pod and a resumed attempt finds
	// its session. "" : the home is the pod's own, gone with it.
	SessionClaim string
	Pending      time.Duration
	StuckTimeout time.Duration // STUCK_TIMEOUT: the driver's own watch
	AgentTimeout time.Duration // AGENT_TIMEOUT: activeDeadlineSeconds
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

// follow opens pods/log?follow for the agent's container, from since when it is
// set (a stream that dropped is opened again).
func (d *Driver) follow(ctx context.Context, pod string, since time.Time) (io.ReadCloser, error) {
	o := &corev1.PodLogOptions{Container: agentName, Follow: true}
	if !since.IsZero() {
		t := metav1.NewTime(since)
		o.SinceTime = &t
	}
	return d.client.PodLog(ctx, d.cfg.Namespace, pod, o)
}

// Driver runs attempts as Jobs. Start it once; Run from any goroutine.
type Driver struct {
	cfg    Config
	client *API
	git    *worktree.Client
	clock  clock.WithTicker

	informers []cache.SharedIndexInformer // Jobs, pods
	running   sync.WaitGroup              // the informers' goroutines
	jobs      batchlisters.JobLister
	pods      corelisters.PodLister

	mu      sync.Mutex
	waiters map[string]chan struct{} // Job name -> "look again"
}

// Option changes a Driver for a test.
type Option func(*Driver)

// WithClock replaces the wall clock.
func WithClock(c clock.WithTicker) Option { return func(d *Driver) { d.clock = c } }

// New makes a driver over client; git is the repository's client (it
// pushes the starts and fetches the results).
func New(cfg Config, client *API, git *worktree.Client, opts ...Option) (*Driver, error) {
	if cfg.Namespace == "" || cfg.Image == "" || cfg.Remote == "" {
		return nil, errors.New("AGENT_RUNNER=kubernetes needs K8S_NAMESPACE, K8S_IMAGE and K8S_REMOTE")
	}
	if cfg.MaxEvictions <= 0 {
		cfg.MaxEvictions = DefaultMaxEvictions
	}
	d := &Driver{cfg: cfg, client: client, git: git, clock: clock.RealClock{}, waiters: map[string]chan struct{}{}}
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
	ns := d.cfg.Namespace
	tweak := func(o metav1.ListOptions) metav1.ListOptions { o.LabelSelector = sel; return o }
	ji := d.informer(&batchv1.Job{}, &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return d.client.ListJobs(ctx, ns, tweak(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return d.client.WatchJobs(ctx, ns, tweak(o))
		},
	})
	pi := d.informer(&corev1.Pod{}, &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return d.client.ListPods(ctx, ns, tweak(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return d.client.WatchPods(ctx, ns, tweak(o))
		},
	})
	d.jobs, d.pods = batchlisters.NewJobLister(ji.GetIndexer()), corelisters.NewPodLister(pi.GetIndexer())
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    d.wake,
		UpdateFunc: func(_, o any) { d.wake(o) },
		DeleteFunc: d.wake,
	}
	for _, inf := range []cache.SharedIndexInformer{ji, pi} {
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
		d.informers = append(d.informers, inf)
		d.running.Go(func() { inf.RunWithContext(ctx) })
	}
	return nil
}

// informer is one shared informer of this driver's objects (a reflector
// that lists again when its watch drops), indexed by namespace as the
// listers read it.
func (d *Driver) informer(obj runtime.Object, lw *cache.ListWatch) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}

// Synced waits for the watches' first list (or ctx). It waits on the
// informers' own "synced" channel: cache.WaitForCacheSync polls it every
// 100 ms, so every driver start waited about that long for nothing.
func (d *Driver) Synced(ctx context.Context) error {
	for _, inf := range d.informers {
		select {
		case <-inf.HasSyncedChecker().Done():
		case <-ctx.Done():
			return fmt.Errorf("kubernetes: the watch of Jobs and pods did not sync: %w", context.Cause(ctx))
		}
	}
	return nil
}

// Stop waits for the informers to end (their context is done).
func (d *Driver) Stop() { d.running.Wait() }

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
	err := d.client.DeleteJob(context.WithoutCancel(ctx), d.cfg.Namespace, name, metav1.DeleteOptions{PropagationPolicy: &fg})
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
	rc, err := restConfig(kubeconfig, kcontext)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes: %w", err)
	}
	api, err := NewAPI(rc)
	if err != nil {
		return nil, nil, err
	}
	if d, err = New(cfg, api, git); err != nil {
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

// Probe checks what a run under AGENT_RUNNER=kubernetes needs of the
// cluster before one starts (doctor): the driver's credentials load,
// K8S_CPU and K8S_MEMORY parse, and the API server lets it list Jobs in
// the namespace. It changes nothing.
func Probe(ctx context.Context, cfg Config, kubeconfig, kcontext string) error {
	if _, err := (&Driver{cfg: cfg}).resources(); err != nil {
		return err
	}
	rc, err := restConfig(kubeconfig, kcontext)
	if err != nil {
		return err
	}
	api, err := NewAPI(rc)
	if err != nil {
		return err
	}
	if _, err := api.ListJobs(ctx, cfg.Namespace, metav1.ListOptions{Limit: 1, LabelSelector: LabelApp + "=" + appName}); err != nil {
		return fmt.Errorf("list Jobs in namespace %s at %s: %w", cfg.Namespace, rc.Host, err)
	}
	return nil
}

// restConfig loads the driver's credentials: kubeconfig ("" :
// $KUBECONFIG, else ~/.kube/config, else the pod's own in-cluster
// account) and its context ("" the current one).
func restConfig(kubeconfig, kcontext string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kcontext}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("the driver's credentials (K8S_KUBECONFIG): %w", err)
	}
	return rc, nil
}
