package scheduler

// Test support: an in-memory Store, a scripted fake Runner, a fake Merger
// that checks merges are serial, and an event collector the tests can wait
// on. Nothing here touches git or starts a process. Coordination is done
// with channels only; the only timeouts are generous upper bounds that turn
// a hang into a test failure.

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/state"

	"github.com/claudopilot/claudopilot/ledger"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
)

// hangTimeout is how long a test waits for something that should happen
// promptly before it reports a hang. It is an upper bound only: no test
// depends on anything happening within a shorter time.
const hangTimeout = 30 * time.Second

// manifestOf builds manifest text from phase lines such as
// "[pending] **a** — A (deps: none)", numbering them.
func manifestOf(lines ...string) string {
	var b strings.Builder
	b.WriteString("# Roadmap\n\n**Status:** in-progress\n\n## Phases\n\n")
	for i, l := range lines {
		fmt.Fprintf(&b, "%d. %s\n", i+1, l)
	}
	return b.String()
}

// parseRoadmap validates manifest text into a Roadmap.
func parseRoadmap(t testing.TB, text string, docs ...string) *roadmap.Roadmap {
	t.Helper()
	rm, err := roadmap.Parse("/rm", []byte(text), docs, roadmap.Options{})
	if err != nil {
		t.Fatalf("roadmap.Parse: %v\n%s", err, text)
	}
	return rm
}

// ---------------------------------------------------------------- Store

type stateWrite struct {
	ID    string
	State manifest.State
}

// memStore is the live manifest kept in memory. SetState applies
// manifest.Apply to the bytes, like roadmap.File does to the file.
type memStore struct {
	mu      sync.Mutex
	src     []byte
	writes  []stateWrite
	setErr  func(id string, s manifest.State) error // optional failure injection
	readErr error
	// path, when set, gets a copy of the bytes after every change, for
	// code that reads the manifest file itself (edits).
	path string
	// mtime, when set, is the file's modification time (ModTime); unset,
	// the store has none to tell, as the tests before it assume.
	mtime time.Time
}

// ModTime is the live file's modification time, when the test set one.
func (m *memStore) ModTime() (time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mtime.IsZero() {
		return time.Time{}, os.ErrNotExist
	}
	return m.mtime, nil
}

func newMemStore(text string) *memStore { return &memStore{src: []byte(text)} }

func (m *memStore) SetState(id string, s manifest.State) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.setErr != nil {
		if err := m.setErr(id, s); err != nil {
			return err
		}
	}
	out, err := manifest.Apply(m.src, id, s)
	if err != nil {
		return err
	}
	m.src = out
	m.writes = append(m.writes, stateWrite{id, s})
	return m.mirror()
}

// mirror writes the bytes to m.path if set; the caller holds m.mu.
func (m *memStore) mirror() error {
	if m.path == "" {
		return nil
	}
	return os.WriteFile(m.path, m.src, 0o644)
}

func (m *memStore) Read() (*manifest.Manifest, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.readErr != nil {
		return nil, m.readErr
	}
	return manifest.Parse(m.src)
}

func (m *memStore) Source() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.readErr != nil {
		return nil, m.readErr
	}
	return bytes.Clone(m.src), nil
}

func (m *memStore) text() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return string(m.src)
}

func (m *memStore) state(t testing.TB, id string) manifest.State {
	t.Helper()
	mf, err := m.Read()
	if err != nil {
		t.Fatalf("store: %v", err)
	}
	p := mf.Phase(id)
	if p == nil {
		t.Fatalf("store: no phase %q", id)
	}
	return p.State
}

// wantStates checks the stored state of every listed phase.
func (m *memStore) wantStates(t testing.TB, want map[string]manifest.State) {
	t.Helper()
	for id, st := range want {
		if got := m.state(t, id); got != st {
			t.Errorf("store: phase %s is [%s], want [%s]", id, got, st)
		}
	}
}

// ---------------------------------------------------------------- Runner

// step scripts one Runner call.
type step struct {
	OK        bool
	Reason    state.Reason
	Detail    string
	Log       string // default /logs/<id>/<role>-<attempt>.log
	Tip       string // default tip-<id>-<role>-<call>
	Cooldown  time.Duration
	Transient bool
	// Wait makes the call block until Hold is closed or ctx is done
	// (Hold may be nil: then only ctx ends it).
	Wait bool
	Hold <-chan struct{}
	// CancelOK: when ctx ends the wait, report success anyway (an agent
	// that finished just as the driver was interrupted).
	CancelOK bool
	// Found: the branch was found done, no agent ran (a resumed phase).
	Found bool
	// Usage is what the agent reports spending.
	Usage ledger.Usage
	// Exit is the agent's exit code for Reason ReasonExit (default 1).
	Exit int
	// Question: the agent asked it (CLAUDOPILOT-NEEDS-INPUT).
	Question string
}

var okStep = step{OK: true}

func fail(r state.Reason) step { return step{Reason: r, Detail: "detail: " + string(r)} }

type runKey struct {
	ID   string
	Role state.Role
}

// fakeRunner plays scripted outcomes per phase and role, in call order.
// Unscripted calls succeed.
type fakeRunner struct {
	maxParallel int // > 0: a call beyond this many at once is a violation

	mu         sync.Mutex
	script     map[runKey][]step
	jobs       []Job
	calls      map[string]int // per phase
	roleCalls  map[runKey]int
	cur, peak  int
	violations []string
	cancelled  int // calls that returned because ctx ended
	returned   int
	pgid       int

	// entered, when set, receives every Job as its call starts (after the
	// bookkeeping above, before any wait).
	entered chan Job
	// onRun, when set, runs in the worker goroutine at the start of a call.
	onRun func(Job)
	// exited, when set, receives every Job just before its call returns.
	exited chan Job
}

func newRunner(maxParallel int) *fakeRunner {
	return &fakeRunner{
		maxParallel: maxParallel,
		script:      map[runKey][]step{},
		calls:       map[string]int{},
		roleCalls:   map[runKey]int{},
	}
}

// on appends scripted steps for calls of id in role.
func (r *fakeRunner) on(id string, role state.Role, steps ...step) *fakeRunner {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := runKey{id, role}
	r.script[k] = append(r.script[k], steps...)
	return r
}

func (r *fakeRunner) Run(ctx context.Context, j Job, started func(pgid int)) Outcome {
	r.mu.Lock()
	r.cur++
	r.peak = max(r.peak, r.cur)
	if r.maxParallel > 0 && r.cur > r.maxParallel {
		r.violations = append(r.violations, fmt.Sprintf("%d agents at once (max %d) when %s %s/%d started", r.cur, r.maxParallel, j.ID, j.Role, j.Attempt))
	}
	k := runKey{j.ID, j.Role}
	r.calls[j.ID]++
	r.roleCalls[k]++
	n := r.roleCalls[k]
	r.jobs = append(r.jobs, j)
	st := okStep
	if q := r.script[k]; len(q) > 0 {
		st, r.script[k] = q[0], q[1:]
	}
	r.pgid++
	pgid := 1000 + r.pgid
	entered, onRun := r.entered, r.onRun
	r.mu.Unlock()

	if onRun != nil {
		onRun(j)
	}
	started(pgid)
	if entered != nil {
		entered <- j
	}
	o := Outcome{ID: j.ID, Role: j.Role, Attempt: j.Attempt, Started: time.Now()}
	cancelled := false
	if st.Wait {
		select {
		case <-st.Hold:
		case <-ctx.Done():
			cancelled = true
		}
	}
	o.LogPath = st.Log
	o.Usage = st.Usage
	if j.Capped != "" && !st.Found {
		// Over a cap and not done: the runner starts no agent.
		st = step{Reason: state.ReasonBudget, Detail: j.Capped, Found: true}
		o.Usage = ledger.Usage{}
	}
	if !st.Found {
		o.Usage.Sessions++ // an agent started, as the runner counts it
	}
	if o.LogPath == "" {
		o.LogPath = fmt.Sprintf("/logs/%s/%s-%d.log", j.ID, j.Role, j.Attempt)
	}
	switch {
	case cancelled && !st.CancelOK:
		o.Reason, o.Detail, o.ExitCode = state.ReasonExit, "interrupted", -1
	case st.OK || cancelled:
		o.OK, o.Found = true, st.Found
		o.Tip = st.Tip
		if o.Tip == "" {
			o.Tip = fmt.Sprintf("tip-%s-%s-%d", j.ID, j.Role, n)
		}
	default:
		o.Reason, o.Detail, o.Cooldown, o.Transient, o.Found = st.Reason, st.Detail, st.Cooldown, st.Transient, st.Found
		o.Question = st.Question
		if o.Reason == state.ReasonExit {
			o.ExitCode = cmp.Or(st.Exit, 1)
		}
	}
	// A fixed logical duration, so time spent adds up exactly.
	o.Ended = o.Started.Add(time.Minute)

	r.mu.Lock()
	r.cur--
	r.returned++
	if cancelled {
		r.cancelled++
	}
	exited := r.exited
	r.mu.Unlock()
	if exited != nil {
		exited <- j
	}
	return o
}

// jobsOf returns the jobs started for id, optionally only in one role.
func (r *fakeRunner) jobsOf(id string, role state.Role) []Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Job
	for _, j := range r.jobs {
		if j.ID == id && (role == "" || j.Role == role) {
			out = append(out, j)
		}
	}
	return out
}

func (r *fakeRunner) allJobs() []Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.jobs)
}

func (r *fakeRunner) callsOf(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[id]
}

func (r *fakeRunner) peakSeen() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.peak
}

func (r *fakeRunner) running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

// check reports concurrency violations and calls still in flight.
func (r *fakeRunner) check(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.violations {
		t.Errorf("runner: %s", v)
	}
	if r.cur != 0 {
		t.Errorf("runner: %d calls still in flight after Run returned", r.cur)
	}
	if r.returned != len(r.jobs) {
		t.Errorf("runner: %d of %d calls returned", r.returned, len(r.jobs))
	}
}

// ---------------------------------------------------------------- Merger

// mstep scripts one Merge call; the zero value is a success.
type mstep struct {
	Wait    []string
	Waiting string
	Changed chan struct{} // the watch a waiting merge hands back
	Reason  state.Reason
	Detail  string
	Err     error
	// Hold, when set, makes the call wait until it is closed, ignoring
	// ctx: a merge past its gate, whose ref move is never cut off.
	Hold <-chan struct{}
	// Gate, when set, makes the call wait like a merge gate: until it is
	// closed, or until ctx is cancelled, which ends the merge with ctx's
	// error.
	Gate <-chan struct{}
	// Called, when set, is closed as the call starts.
	Called chan struct{}
	// Stale reports the review stale (the base moved since it).
	Stale bool
}

func (s mstep) ok() bool {
	return len(s.Wait) == 0 && s.Waiting == "" && s.Reason == "" && s.Err == nil && !s.Stale
}

// fakeMerger lands phases by writing [merged] into the store, as the real
// merger does, and records whether two merges ever overlapped.
type fakeMerger struct {
	store *memStore

	inFlight atomic.Int32
	overlaps atomic.Int32

	mu      sync.Mutex
	script  map[string][]mstep
	jobs    []MergeJob
	order   []string // landed phases, in order
	onMerge func(MergeJob)
}

func newMerger(store *memStore) *fakeMerger {
	return &fakeMerger{store: store, script: map[string][]mstep{}}
}

func (m *fakeMerger) on(id string, steps ...mstep) *fakeMerger {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.script[id] = append(m.script[id], steps...)
	return m
}

func (m *fakeMerger) Merge(ctx context.Context, j MergeJob) MergeOutcome {
	if m.inFlight.Add(1) != 1 {
		m.overlaps.Add(1)
	}
	defer m.inFlight.Add(-1)

	m.mu.Lock()
	m.jobs = append(m.jobs, j)
	var st mstep
	if q := m.script[j.ID]; len(q) > 0 {
		st, m.script[j.ID] = q[0], q[1:]
	}
	onMerge := m.onMerge
	m.mu.Unlock()

	if st.Called != nil {
		close(st.Called)
	}
	if onMerge != nil {
		onMerge(j)
	}
	if st.Hold != nil {
		<-st.Hold
	}
	if st.Gate != nil {
		select {
		case <-st.Gate:
		case <-ctx.Done():
			st.Err = ctx.Err()
		}
	}
	out := MergeOutcome{ID: j.ID, Wait: st.Wait, Waiting: st.Waiting, Changed: st.Changed, Reason: st.Reason, Detail: st.Detail, Err: st.Err, Stale: st.Stale}
	if st.ok() {
		if err := m.store.SetState(j.ID, manifest.Merged); err != nil {
			out.Err = err
		} else {
			out.OK = true
			out.Commit = "commit-" + j.ID
		}
	}
	m.mu.Lock()
	if out.OK {
		m.order = append(m.order, j.ID)
	}
	m.mu.Unlock()
	return out
}

func (m *fakeMerger) landed() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.order)
}

func (m *fakeMerger) jobsOf(id string) []MergeJob {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []MergeJob
	for _, j := range m.jobs {
		if j.ID == id {
			out = append(out, j)
		}
	}
	return out
}

func (m *fakeMerger) allJobs() []MergeJob {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.jobs)
}

func (m *fakeMerger) check(t testing.TB) {
	t.Helper()
	if n := m.overlaps.Load(); n != 0 {
		t.Errorf("merger: %d merges started while another was running", n)
	}
}

// ---------------------------------------------------------------- events

type evWaiter struct {
	pred func(Event) bool
	ch   chan Event
}

// eventLog collects a scheduler's events and lets a test wait for one.
type eventLog struct {
	ch   chan Event
	done chan struct{}

	mu      sync.Mutex
	list    []Event
	waiters []*evWaiter
	closed  bool
	// hook, when set before the run starts, sees every event before it
	// is recorded. While it runs, the scheduler's loop blocks at its next
	// emit.
	hook func(Event)
}

func newEventLog() *eventLog {
	l := &eventLog{ch: make(chan Event), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for e := range l.ch {
			if l.hook != nil {
				l.hook(e)
			}
			l.mu.Lock()
			l.list = append(l.list, e)
			keep := l.waiters[:0]
			for _, w := range l.waiters {
				if w.pred(e) {
					w.ch <- e // buffered, 1
				} else {
					keep = append(keep, w)
				}
			}
			l.waiters = keep
			l.mu.Unlock()
		}
	}()
	return l
}

// when returns a channel that receives the first event (seen so far or
// later) matching pred.
func (l *eventLog) when(pred func(Event) bool) <-chan Event {
	w := &evWaiter{pred: pred, ch: make(chan Event, 1)}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.list {
		if pred(e) {
			w.ch <- e
			return w.ch
		}
	}
	l.waiters = append(l.waiters, w)
	return w.ch
}

// wait blocks until an event matching pred has been seen.
func (l *eventLog) wait(t testing.TB, what string, pred func(Event) bool) Event {
	t.Helper()
	select {
	case e := <-l.when(pred):
		return e
	case <-time.After(hangTimeout):
		t.Fatalf("no %s event within %v; events:\n%s", what, hangTimeout, fmtEvents(l.all()))
		return Event{}
	}
}

// close ends collection (after Run has returned) and returns every event.
func (l *eventLog) close() []Event {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.ch)
	}
	l.mu.Unlock()
	<-l.done
	return l.all()
}

func (l *eventLog) all() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.list)
}

func isEv(kind, phase string) func(Event) bool {
	return func(e Event) bool { return e.Kind == kind && (phase == "" || e.Phase == phase) }
}

func isLaunch(phase string, role state.Role, attempt int) func(Event) bool {
	return func(e Event) bool {
		return e.Kind == EvLaunch && e.Phase == phase && e.Role == role && (attempt == 0 || e.Attempt == attempt)
	}
}

// mustFind returns the first event matching pred.
func mustFind(t testing.TB, evs []Event, pred func(Event) bool) Event {
	t.Helper()
	i := slices.IndexFunc(evs, pred)
	if i < 0 {
		t.Fatalf("no such event in:\n%s", fmtEvents(evs))
	}
	return evs[i]
}

func fmtEvents(evs []Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "  %-8s %-10s", e.Kind, e.Phase)
		if e.Role != "" {
			fmt.Fprintf(&b, " %s/%d", e.Role, e.Attempt)
		}
		if e.Reason != "" {
			fmt.Fprintf(&b, " reason=%s", e.Reason)
		}
		if e.Detail != "" {
			fmt.Fprintf(&b, " %q", e.Detail)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// kinds returns the events' kinds (optionally only for one phase).
func kinds(evs []Event, phase string) []string {
	var out []string
	for _, e := range evs {
		if phase == "" || e.Phase == phase {
			out = append(out, e.Kind)
		}
	}
	return out
}

func indexOf(evs []Event, pred func(Event) bool) int {
	return slices.IndexFunc(evs, pred)
}

// ---------------------------------------------------------------- harness

type harness struct {
	t      *testing.T
	cfg    Config
	rm     *roadmap.Roadmap
	store  *memStore
	runner *fakeRunner
	merger *fakeMerger
	jn     *state.Journal
	ev     *eventLog
	s      *Scheduler
}

// newHarness wires a scheduler over manifest text with fakes. Script the
// runner and merger before calling run or start.
func newHarness(t *testing.T, text string, cfg Config) *harness {
	t.Helper()
	store := newMemStore(text)
	h := &harness{
		t:      t,
		cfg:    cfg,
		rm:     parseRoadmap(t, text),
		store:  store,
		runner: newRunner(max(cfg.MaxParallel, 1)),
		merger: newMerger(store),
	}
	return h
}

// build makes the scheduler; run and start call it if needed.
func (h *harness) build() *Scheduler {
	if h.s == nil {
		h.ev = newEventLog()
		h.s = New(h.cfg, h.rm, h.store, h.runner, h.merger, h.jn, h.ev.ch)
	}
	return h.s
}

type runResult struct {
	sum Summary
	err error
}

// start runs the scheduler in the background.
func (h *harness) start(ctx context.Context) <-chan runResult {
	s := h.build()
	out := make(chan runResult, 1)
	go func() {
		sum, err := s.Run(ctx)
		out <- runResult{sum, err}
	}()
	return out
}

// await waits for a started run to end, then stops event collection and
// checks the fakes' invariants.
func (h *harness) await(ch <-chan runResult) (Summary, []Event, error) {
	h.t.Helper()
	select {
	case r := <-ch:
		evs := h.ev.close()
		h.runner.check(h.t)
		h.merger.check(h.t)
		return r.sum, evs, r.err
	case <-time.After(hangTimeout):
		h.t.Fatalf("Run did not return within %v; events:\n%s", hangTimeout, fmtEvents(h.ev.all()))
		return Summary{}, nil, nil
	}
}

// run runs the scheduler to the end.
func (h *harness) run(ctx context.Context) (Summary, []Event, error) {
	h.t.Helper()
	return h.await(h.start(ctx))
}

func phaseSummary(t testing.TB, sum Summary, id string) PhaseSummary {
	t.Helper()
	for _, p := range sum.Phases {
		if p.ID == id {
			return p
		}
	}
	t.Fatalf("summary has no phase %s", id)
	return PhaseSummary{}
}

// errorIs is errors.Is with a readable failure.
func wantErrIs(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("Run error = %v, want one wrapping %v", err, target)
	}
}

func wantHalt(t testing.TB, err error) *HaltError {
	t.Helper()
	var he *HaltError
	if !errors.As(err, &he) {
		t.Fatalf("Run error = %v (%T), want *HaltError", err, err)
	}
	return he
}
