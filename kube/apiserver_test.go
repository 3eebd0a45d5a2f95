package kube

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

var (
	jobsGVR = batchv1.SchemeGroupVersion.WithResource("jobs")
	podsGVR = corev1.SchemeGroupVersion.WithResource("pods")
)

// apiServer is a fake API server for the calls the driver makes: the
// real REST paths (lists, watches with their initial events, creates,
// deletes, pods/log?follow) over a store of objects, so the driver's own
// client (API) is what the tests drive. There is no Job controller and no
// kubelet: the test plays both, writing to the store directly.
type apiServer struct {
	t       testing.TB
	srv     *httptest.Server
	codecs  serializer.CodecFactory
	tracker *store
	logs    *feed
	created func(*batchv1.Job) // each Job created, as created
	closing chan struct{}

	mu       sync.Mutex
	calls    []apiCall
	watchers map[*watcher]bool
	rv       int // the last write's resource version
}

// watcher is one watch's queue: unbounded, so a burst of writes never
// blocks or drops.
type watcher struct {
	gvr  schema.GroupVersionResource
	ns   string
	sel  labels.Selector
	mu   sync.Mutex
	q    []watch.Event
	wake chan struct{}
}

func (w *watcher) push(ev watch.Event) {
	w.mu.Lock()
	w.q = append(w.q, ev)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watcher) take() []watch.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.q
	w.q = nil
	return q
}

// apiCall is one request the driver made.
type apiCall struct {
	Verb, Resource, Name string
	Delete               *metav1.DeleteOptions
	Since                string // a log's sinceTime
}

func newAPIServer(t testing.TB, logs *feed, created func(*batchv1.Job)) *apiServer {
	s := NewScheme()
	a := &apiServer{t: t, codecs: serializer.NewCodecFactory(s), logs: logs, created: created, closing: make(chan struct{}), watchers: map[*watcher]bool{}}
	a.tracker = newStore(s)
	a.srv = httptest.NewServer(a)
	t.Cleanup(func() { close(a.closing); a.srv.Close() })
	return a
}

// api is a driver's client of the server (no client-side rate limit:
// the benchmark makes 200 Jobs at once).
func (a *apiServer) api() *API {
	api, err := NewAPI(&rest.Config{Host: a.srv.URL, QPS: -1})
	if err != nil {
		a.t.Fatal(err)
	}
	return api
}

func (a *apiServer) record(c apiCall) {
	a.mu.Lock()
	a.calls = append(a.calls, c)
	a.mu.Unlock()
}

// write changes the store and tells the watches, in the order of the
// writes.
func (a *apiServer) write(gvr schema.GroupVersionResource, t watch.EventType, obj runtime.Object, ns, name string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var err error
	switch t {
	case watch.Added:
		err = a.tracker.Create(gvr, obj, ns)
	case watch.Modified:
		err = a.tracker.Update(gvr, obj, ns)
	case watch.Deleted:
		if obj, err = a.tracker.Get(gvr, ns, name); err == nil {
			err = a.tracker.Delete(gvr, ns, name)
		}
	}
	if err != nil {
		return err
	}
	a.rv++
	m, _ := meta.Accessor(obj)
	for w := range a.watchers {
		if w.gvr == gvr && w.ns == ns && w.sel.Matches(labels.Set(m.GetLabels())) {
			w.push(watch.Event{Type: t, Object: obj.DeepCopyObject()})
		}
	}
	return nil
}

// Create, Update and Delete are the test's writes (the Job
// controller's, the kubelet's) and the driver's.
func (a *apiServer) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string) error {
	return a.write(gvr, watch.Added, obj, ns, "")
}

func (a *apiServer) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string) error {
	return a.write(gvr, watch.Modified, obj, ns, "")
}

func (a *apiServer) Delete(gvr schema.GroupVersionResource, ns, name string) error {
	return a.write(gvr, watch.Deleted, nil, ns, name)
}

// Calls are the requests the driver made so far.
func (a *apiServer) Calls() []apiCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]apiCall(nil), a.calls...)
}

// route reads /apis/batch/v1/namespaces/NS/jobs[/NAME] and
// /api/v1/namespaces/NS/pods[/NAME[/log]].
func route(path string) (gvr schema.GroupVersionResource, ns, name, sub string, ok bool) {
	p := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(p) >= 6 && p[0] == "apis" && p[1] == "batch" && p[2] == "v1" && p[5] == "jobs":
		gvr, p = jobsGVR, p[4:]
	case len(p) >= 5 && p[0] == "api" && p[1] == "v1" && p[4] == "pods":
		gvr, p = podsGVR, p[3:]
	default:
		return gvr, "", "", "", false
	}
	ns = p[0]
	if len(p) > 2 {
		name = p[2]
	}
	if len(p) > 3 {
		sub = p[3]
	}
	return gvr, ns, name, sub, true
}

func (a *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	gvr, ns, name, sub, ok := route(r.URL.Path)
	if !ok {
		a.fail(w, apierrors.NewNotFound(schema.GroupResource{Resource: r.URL.Path}, ""))
		return
	}
	q := r.URL.Query()
	sel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		a.fail(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	switch {
	case sub == "log":
		a.record(apiCall{Verb: "log", Resource: gvr.Resource, Name: name, Since: q.Get("sinceTime")})
		a.log(w, r, name)
	case r.Method == http.MethodGet && name == "" && q.Get("watch") == "true":
		a.record(apiCall{Verb: "watch", Resource: gvr.Resource})
		a.watch(w, r, gvr, ns, sel, q)
	case r.Method == http.MethodGet && name == "":
		a.record(apiCall{Verb: "list", Resource: gvr.Resource})
		list, err := a.list(gvr, ns, sel)
		a.reply(w, gvr, http.StatusOK, list, err)
	case r.Method == http.MethodGet:
		a.record(apiCall{Verb: "get", Resource: gvr.Resource, Name: name})
		obj, err := a.tracker.Get(gvr, ns, name)
		a.reply(w, gvr, http.StatusOK, obj, err)
	case r.Method == http.MethodPost && gvr == jobsGVR:
		a.record(apiCall{Verb: "create", Resource: gvr.Resource})
		a.create(w, r, ns)
	case r.Method == http.MethodDelete:
		o := &metav1.DeleteOptions{}
		if b, _ := io.ReadAll(r.Body); len(b) > 0 {
			if err := json.Unmarshal(b, o); err != nil {
				a.fail(w, apierrors.NewBadRequest(err.Error()))
				return
			}
		}
		a.record(apiCall{Verb: "delete", Resource: gvr.Resource, Name: name, Delete: o})
		a.reply(w, gvr, http.StatusOK, &metav1.Status{Status: metav1.StatusSuccess}, a.Delete(gvr, ns, name))
	default:
		a.fail(w, apierrors.NewMethodNotSupported(gvr.GroupResource(), r.Method))
	}
}

func (a *apiServer) create(w http.ResponseWriter, r *http.Request, ns string) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		a.fail(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	job := &batchv1.Job{}
	if err := runtime.DecodeInto(a.codecs.UniversalDecoder(), b, job); err != nil {
		a.fail(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	job.CreationTimestamp = metav1.Now()
	if err := a.Create(jobsGVR, job, ns); err != nil {
		a.fail(w, err)
		return
	}
	if a.created != nil {
		a.created(job.DeepCopy())
	}
	a.reply(w, jobsGVR, http.StatusCreated, job, nil)
}

// list is the namespace's objects of gvr that sel matches.
func (a *apiServer) list(gvr schema.GroupVersionResource, ns string, sel labels.Selector) (runtime.Object, error) {
	kind := map[schema.GroupVersionResource]string{jobsGVR: "Job", podsGVR: "Pod"}[gvr]
	list, err := a.tracker.List(gvr, gvr.GroupVersion().WithKind(kind), ns)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	var keep []runtime.Object
	for _, o := range items {
		if m, err := meta.Accessor(o); err == nil && sel.Matches(labels.Set(m.GetLabels())) {
			keep = append(keep, o)
		}
	}
	return list, meta.SetList(list, keep)
}

// watch streams the events of the objects sel matches. With
// sendInitialEvents (client-go's default, WatchListClient) it first
// sends what is there and a bookmark marking their end, as the API
// server does; without, it starts from now.
func (a *apiServer) watch(w http.ResponseWriter, r *http.Request, gvr schema.GroupVersionResource, ns string, sel labels.Selector, q map[string][]string) {
	wt := &watcher{gvr: gvr, ns: ns, sel: sel, wake: make(chan struct{}, 1)}
	a.mu.Lock()
	var items []runtime.Object
	var err error
	if first(q["sendInitialEvents"]) == "true" {
		var list runtime.Object
		if list, err = a.list(gvr, ns, sel); err == nil {
			items, err = meta.ExtractList(list)
		}
	}
	rv := strconv.Itoa(a.rv)
	a.watchers[wt] = true
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.watchers, wt)
		a.mu.Unlock()
	}()
	if err != nil {
		a.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if first(q["sendInitialEvents"]) == "true" {
		for _, o := range items {
			a.event(w, gvr, watch.Added, o)
		}
		mark := map[schema.GroupVersionResource]runtime.Object{jobsGVR: &batchv1.Job{}, podsGVR: &corev1.Pod{}}[gvr]
		m, _ := meta.Accessor(mark)
		m.SetResourceVersion(rv)
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		a.event(w, gvr, watch.Bookmark, mark)
	}
	w.(http.Flusher).Flush()
	for {
		select {
		case <-wt.wake:
			for _, ev := range wt.take() {
				a.event(w, gvr, ev.Type, ev.Object)
			}
		case <-r.Context().Done():
			return
		case <-a.closing:
			return
		}
	}
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// event writes one watch event, as the API server frames them.
func (a *apiServer) event(w http.ResponseWriter, gvr schema.GroupVersionResource, t watch.EventType, obj runtime.Object) {
	raw, err := runtime.Encode(a.codecs.LegacyCodec(gvr.GroupVersion()), obj)
	if err != nil {
		a.t.Error(err)
		return
	}
	b, _ := json.Marshal(metav1.WatchEvent{Type: string(t), Object: runtime.RawExtension{Raw: raw}})
	w.Write(append(b, '\n'))
	w.(http.Flusher).Flush()
}

// log streams the pod's log the test gave (see feed).
func (a *apiServer) log(w http.ResponseWriter, r *http.Request, pod string) {
	rc := a.logs.open(r.Context(), pod)
	defer rc.Close()
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	buf := make([]byte, 32<<10)
	for {
		n, err := rc.Read(buf)
		if n > 0 {
			w.Write(buf[:n])
			w.(http.Flusher).Flush()
		}
		if err != nil {
			return
		}
	}
}

func (a *apiServer) reply(w http.ResponseWriter, gvr schema.GroupVersionResource, code int, obj runtime.Object, err error) {
	if err != nil {
		a.fail(w, err)
		return
	}
	b, err := runtime.Encode(a.codecs.LegacyCodec(gvr.GroupVersion()), obj)
	if err != nil {
		a.t.Error(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b)
}

// fail answers as the API server does: a Status with the error's code.
func (a *apiServer) fail(w http.ResponseWriter, err error) {
	st := apierrors.NewInternalError(err).ErrStatus
	if s, ok := err.(apierrors.APIStatus); ok {
		st = s.Status()
	}
	st.Kind, st.APIVersion = "Status", "v1"
	b, _ := json.Marshal(st)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	w.Write(b)
}

// store is the API server's objects by resource, namespace and name, with
// the semantics of client-go's object tracker (k8s.io/client-go/testing)
// for the calls the tests make: a deep copy in and out, AlreadyExists on a
// second create, NotFound on an update, get or delete of what is not
// there, lists sorted by namespace and name with the resource's version.
// Not the tracker itself: it took in ~95 packages (protobuf, kube-openapi,
// structured-merge-diff) and ~35% of this test binary's link (#23).
type store struct {
	scheme *runtime.Scheme
	mu     sync.Mutex
	objs   map[schema.GroupVersionResource]map[string]runtime.Object // by "ns/name"
	rv     map[schema.GroupVersionResource]int64                     // the last write's version, from 1 (none)
}

func newStore(s *runtime.Scheme) *store {
	return &store{scheme: s, objs: map[schema.GroupVersionResource]map[string]runtime.Object{}, rv: map[schema.GroupVersionResource]int64{}}
}

func (s *store) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string) error {
	return s.put(gvr, obj, ns, false)
}

func (s *store) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string) error {
	return s.put(gvr, obj, ns, true)
}

func (s *store) put(gvr schema.GroupVersionResource, obj runtime.Object, ns string, replace bool) error {
	obj = obj.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if m.GetNamespace() == "" {
		m.SetNamespace(ns)
	}
	if m.GetNamespace() != ns {
		return apierrors.NewBadRequest(fmt.Sprintf("request namespace does not match object namespace, request: %q object: %q", ns, m.GetNamespace()))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := ns + "/" + m.GetName()
	_, there := s.objs[gvr][key]
	switch {
	case there && !replace:
		return apierrors.NewAlreadyExists(gvr.GroupResource(), m.GetName())
	case !there && replace:
		return apierrors.NewNotFound(gvr.GroupResource(), m.GetName())
	}
	if s.objs[gvr] == nil {
		s.objs[gvr] = map[string]runtime.Object{}
	}
	s.objs[gvr][key] = obj
	s.rv[gvr] = max(s.rv[gvr], 1) + 1
	return nil
}

func (s *store) Get(gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.objs[gvr][ns+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	return obj.DeepCopyObject(), nil
}

func (s *store) Delete(gvr schema.GroupVersionResource, ns, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objs[gvr][ns+"/"+name]; !ok {
		return apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	delete(s.objs[gvr], ns+"/"+name)
	return nil
}

// List is the namespace's objects of gvr (every namespace's when ns is
// "") in a new gvk+"List", sorted by namespace and name.
func (s *store) List(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, ns string) (runtime.Object, error) {
	list, err := s.scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	lm.SetResourceVersion(strconv.FormatInt(max(s.rv[gvr], 1), 10))
	keys := make([]string, 0, len(s.objs[gvr]))
	for k := range s.objs[gvr] {
		if ns == "" || strings.HasPrefix(k, ns+"/") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	items := make([]runtime.Object, len(keys))
	for i, k := range keys {
		items[i] = s.objs[gvr][k].DeepCopyObject()
	}
	return list, meta.SetList(list, items)
}
