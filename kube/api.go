package kube

import (
	"context"
	"fmt"
	"io"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// API is the part of the Kubernetes API the driver calls: Jobs (create,
// delete, list, watch) and pods (list, watch, log), nothing else. It is
// two REST clients over a scheme of batch/v1 and core/v1 alone: client-go's
// Clientset, and each of its typed clients too, imports the scheme of
// every API group, which made the binary 69 MB larger
// (docs/DEPENDENCIES.md).
type API struct {
	batch, core rest.Interface
	params      runtime.ParameterCodec
}

// NewScheme knows the types the driver reads and writes: batch/v1 and
// core/v1 (with meta/v1's options and watch events).
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	// Both only register types; they fail on a clash, which two fixed
	// groups cannot have.
	_ = batchv1.AddToScheme(s)
	_ = corev1.AddToScheme(s)
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}

// NewAPI makes the driver's API client from the driver's credentials.
func NewAPI(rc *rest.Config) (*API, error) {
	s := NewScheme()
	codecs := serializer.NewCodecFactory(s)
	client := func(gv schema.GroupVersion, path string) (rest.Interface, error) {
		c := rest.CopyConfig(rc)
		c.GroupVersion, c.APIPath = &gv, path
		c.NegotiatedSerializer = codecs.WithoutConversion()
		if c.UserAgent == "" {
			c.UserAgent = "claudopilot"
		}
		return rest.RESTClientFor(c)
	}
	b, err := client(batchv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	c, err := client(corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	return &API{batch: b, core: c, params: runtime.NewParameterCodec(s)}, nil
}

// CreateJob creates job in its namespace.
func (a *API) CreateJob(ctx context.Context, job *batchv1.Job) error {
	return a.batch.Post().Namespace(job.Namespace).Resource("jobs").
		VersionedParams(&metav1.CreateOptions{}, a.params).Body(job).Do(ctx).Error()
}

// DeleteJob deletes the Job name.
func (a *API) DeleteJob(ctx context.Context, ns, name string, o metav1.DeleteOptions) error {
	return a.batch.Delete().Namespace(ns).Resource("jobs").Name(name).Body(&o).Do(ctx).Error()
}

// ListJobs lists the namespace's Jobs.
func (a *API) ListJobs(ctx context.Context, ns string, o metav1.ListOptions) (*batchv1.JobList, error) {
	out := &batchv1.JobList{}
	err := a.batch.Get().Namespace(ns).Resource("jobs").VersionedParams(&o, a.params).Do(ctx).Into(out)
	return out, err
}

// WatchJobs watches the namespace's Jobs.
func (a *API) WatchJobs(ctx context.Context, ns string, o metav1.ListOptions) (watch.Interface, error) {
	o.Watch = true
	return a.batch.Get().Namespace(ns).Resource("jobs").VersionedParams(&o, a.params).Watch(ctx)
}

// ListPods lists the namespace's pods.
func (a *API) ListPods(ctx context.Context, ns string, o metav1.ListOptions) (*corev1.PodList, error) {
	out := &corev1.PodList{}
	err := a.core.Get().Namespace(ns).Resource("pods").VersionedParams(&o, a.params).Do(ctx).Into(out)
	return out, err
}

// WatchPods watches the namespace's pods.
func (a *API) WatchPods(ctx context.Context, ns string, o metav1.ListOptions) (watch.Interface, error) {
	o.Watch = true
	return a.core.Get().Namespace(ns).Resource("pods").VersionedParams(&o, a.params).Watch(ctx)
}

// PodLog opens pods/log of a pod (follow it with o.Follow).
func (a *API) PodLog(ctx context.Context, ns, pod string, o *corev1.PodLogOptions) (io.ReadCloser, error) {
	return a.core.Get().Namespace(ns).Resource("pods").Name(pod).SubResource("log").VersionedParams(o, a.params).Stream(ctx)
}
