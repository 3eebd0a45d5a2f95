package web

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/ledger"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/secret"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/status"
)

type fakeActions struct {
	mu   sync.Mutex
	done []string
	// seen, when set, hears each action done.
	seen chan string
}

func (f *fakeActions) add(s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done = append(f.done, s)
	if f.seen != nil {
		f.seen <- s
	}
	return nil
}
func (f *fakeActions) Pause() error  { return f.add("pause") }
func (f *fakeActions) Resume() error { return f.add("resume") }
func (f *fakeActions) Drain() error  { return f.add("drain") }
func (f *fakeActions) Lane(id string, on bool) error {
	if id != "codex" {
		return errors.New("no lane \"" + id + "\" in LANES (codex)")
	}
	if on {
		return f.add("lane on " + id)
	}
	return f.add("lane off " + id)
}
func (f *fakeActions) Answer(id string, asked time.Time, text string) error {
	if id != "p1" {
		return errors.New("no open question: " + id + " never asked anything")
	}
	if !asked.IsZero() {
		return f.add("answer " + id + " asked " + asked.Format(time.RFC3339) + ": " + text)
	}
	return f.add("answer " + id + ": " + text)
}
func (f *fakeActions) ScannerRun(name string) error {
	if name != "bugs" {
		return errors.New("scanner \"" + name + "\": no scanner of that name")
	}
	return f.add("scanner run " + name)
}
func (f *fakeActions) ScannerSwitch(name string, on bool) error {
	if name != "bugs" {
		return errors.New("scanner \"" + name + "\": no scanner of that name")
	}
	return f.add(fmt.Sprintf("scanner %s on=%v", name, on))
}
func (f *fakeActions) Retry(id string) error {
	if id == "nope" {
		return errors.New("retry: no phase \"nope\"")
	}
	return f.add("retry " + id)
}

const testManifest = `# R

1. [merged] **a** — first
2. [pending] **b** — second (deps: a)
3. [pending] **c** — third (deps: b)
`

type fixture struct {
	srv  *Server
	ts   *httptest.Server
	acts *fakeActions
	log  string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	rm, err := roadmap.Parse("/rm", []byte(testManifest), []string{"a.md", "b.md", "c.md"}, roadmap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	logPath := filepath.Join(dir, "worker-1.log")
	os.WriteFile(logPath, []byte("hello\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI7K7MDENGbPxRfiCYzq81KEY9\n"), 0o644)
	f := &fixture{acts: &fakeActions{}, log: logPath}
	f.srv = &Server{
		Token: "tok", Model: NewModel(rm, nil, state.Rules{}, false), Actions: f.acts, Hub: NewHub(),
		Log: func(id, role string, attempt int) (string, error) {
			if id != "b" {
				return "", errors.New("no phase")
			}
			return logPath, nil
		},
	}
	f.ts = httptest.NewServer(f.srv.Handler())
	t.Cleanup(f.ts.Close)
	return f
}

func (f *fixture) do(t *testing.T, method, path, token, origin, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, f.ts.URL+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestAuthRules(t *testing.T) {
	f := newFixture(t)
	self := f.ts.URL
	tests := []struct {
		name, method, path, token, origin, body string
		want                                    int
	}{
		{"no token", "GET", "/api/v1/state", "", "", "", 401},
		{"wrong token", "GET", "/api/v1/state", "nope", "", "", 401},
		{"token", "GET", "/api/v1/state", "tok", "", "", 200},
		{"page without token", "GET", "/", "", "", "", 401},
		{"cross-origin POST", "POST", "/api/v1/actions", "tok", "http://evil.example", `{"action":"pause"}`, 403},
		{"same-origin POST", "POST", "/api/v1/actions", "tok", self, `{"action":"pause"}`, 200},
		{"POST from a script (no Origin)", "POST", "/api/v1/actions", "tok", "", `{"action":"resume"}`, 200},
		{"no token POST", "POST", "/api/v1/actions", "", self, `{"action":"pause"}`, 401},
		{"GET on actions", "GET", "/api/v1/actions", "tok", "", "", 405},
	}
	for _, tc := range tests {
		if got := f.do(t, tc.method, tc.path, tc.token, tc.origin, tc.body).StatusCode; got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if !slices.Equal(f.acts.done, []string{"pause", "resume"}) {
		t.Errorf("actions %v", f.acts.done)
	}
}

// The one-time URL sets the cookie once; a cookie-authenticated POST must
// name its origin.
func TestLoginCookie(t *testing.T) {
	f := newFixture(t)
	code, _ := f.srv.LoginCode()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(f.ts.URL + "/login?code=" + code)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("login: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	again, _ := http.Get(f.ts.URL + "/login?code=" + code)
	again.Body.Close()
	if again.StatusCode != 403 {
		t.Errorf("second use of the code: %d", again.StatusCode)
	}
	post := func(origin string) int {
		req, _ := http.NewRequest("POST", f.ts.URL+"/api/v1/actions", strings.NewReader(`{"action":"drain"}`))
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		r, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	if got := post(""); got != 403 {
		t.Errorf("cookie POST without Origin: %d", got)
	}
	if got := post("http://evil.example"); got != 403 {
		t.Errorf("cookie POST cross-origin: %d", got)
	}
	if got := post(f.ts.URL); got != 200 {
		t.Errorf("cookie POST same origin: %d", got)
	}
}

func TestActions(t *testing.T) {
	f := newFixture(t)
	for body, want := range map[string]int{
		`{"action":"retry","id":"c"}`:    200,
		`{"action":"retry"}`:             400,
		`{"action":"retry","id":"nope"}`: 409,
		`{"action":"explode"}`:           400,
		`not json`:                       400,
		`{"action":"lane_off"}`:          400,
		`{"action":"lane_on","id":"x"}`:  409,
	} {
		if got := f.do(t, "POST", "/api/v1/actions", "tok", "", body).StatusCode; got != want {
			t.Errorf("%s: %d, want %d", body, got, want)
		}
	}
	for _, body := range []string{`{"action":"lane_off","id":"codex"}`, `{"action":"lane_on","id":"codex"}`} {
		if got := f.do(t, "POST", "/api/v1/actions", "tok", "", body).StatusCode; got != 200 {
			t.Errorf("%s: %d, want 200", body, got)
		}
	}
	if !slices.Equal(f.acts.done, []string{"retry c", "lane off codex", "lane on codex"}) {
		t.Errorf("actions %v", f.acts.done)
	}
}

// The state follows the events: what runs, what is next, cost, pause.
func TestStateFollowsEvents(t *testing.T) {
	f := newFixture(t)
	now := time.Now()
	cost := 0.25
	for _, ev := range []scheduler.Event{
		{Kind: scheduler.EvStart, Time: now},
		{Kind: scheduler.EvLaunch, Phase: "b", State: "running", Role: state.Worker, Attempt: 1, Time: now},
		{Kind: scheduler.EvPaused, Time: now},
		{Kind: scheduler.EvExit, Phase: "b", Role: state.Worker, Attempt: 1, Time: now.Add(time.Second), Usage: &ledger.Usage{CostUSD: &cost}},
		{Kind: scheduler.EvMerging, Phase: "b", Time: now},
	} {
		f.srv.Model.Apply(ev)
	}
	var st State
	json.NewDecoder(f.do(t, "GET", "/api/v1/state", "tok", "", "").Body).Decode(&st)
	b := st.Phases[1]
	if b.ID != "b" || b.State != "running" || b.Activity != "merging" || b.Attempts != 1 || b.Cost == nil || *b.Cost != 0.25 || b.Elapsed != 1 {
		t.Errorf("b: %+v", b)
	}
	if c, ok := b.ByRole["worker"].Cost(); !ok || c != 0.25 {
		t.Errorf("b's worker cost: %+v", b.ByRole)
	}
	if c, ok := st.ByRole["worker"].Cost(); !ok || c != 0.25 {
		t.Errorf("the run's worker cost: %+v", st.ByRole)
	}
	if !st.Paused || st.Cost == nil || *st.Cost != 0.25 || len(st.Next) != 0 {
		t.Errorf("state: %+v", st)
	}
	if !st.Phases[0].Critical && !st.Phases[1].Critical {
		t.Errorf("no critical path marked: %+v", st.Phases)
	}
	if st.Phases[2].Level != 2 || !slices.Equal(st.Phases[2].Deps, []string{"b"}) {
		t.Errorf("c: %+v", st.Phases[2])
	}
	f.srv.Model.Apply(scheduler.Event{Kind: scheduler.EvMerged, Phase: "b", State: "merged", Time: now})
	json.NewDecoder(f.do(t, "GET", "/api/v1/state", "tok", "", "").Body).Decode(&st)
	if !slices.Equal(st.Next, []string{"c"}) {
		t.Errorf("next %v, want [c]", st.Next)
	}
}

// The event stream carries the same JSON as --json.
func TestEventStream(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.ts.URL+"/api/v1/events", nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	if l, _ := rd.ReadString('\n'); !strings.HasPrefix(l, ": claudopilot") {
		t.Fatalf("first line %q", l)
	}
	f.srv.Hub.Publish(scheduler.Event{Kind: scheduler.EvMerged, Phase: "b", State: "merged"})
	for {
		l, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(l, "data: ") {
			if !strings.Contains(l, `"event":"merged","phase":"b"`) {
				t.Errorf("data %q", l)
			}
			return
		}
	}
}

// Logs come scrubbed of secrets, whole or followed.
func TestLogs(t *testing.T) {
	f := newFixture(t)
	resp := f.do(t, "GET", "/api/v1/logs/b?role=worker", "tok", "", "")
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	if resp.StatusCode != 200 || !strings.Contains(b.String(), "hello") || strings.Contains(b.String(), "wJalrXUtnFEMI7K7") || !strings.Contains(b.String(), "[REDACTED]") {
		t.Errorf("log %d: %q", resp.StatusCode, b.String())
	}
	if got := f.do(t, "GET", "/api/v1/logs/x", "tok", "", "").StatusCode; got != 404 {
		t.Errorf("unknown phase: %d", got)
	}
	if got := f.do(t, "GET", "/api/v1/logs/b?attempt=zero", "tok", "", "").StatusCode; got != 400 {
		t.Errorf("bad attempt: %d", got)
	}
	// Follow: existing lines, then one appended later.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.ts.URL+"/api/v1/logs/b?follow=1", nil)
	req.Header.Set("Authorization", "Bearer tok")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	rd := bufio.NewReader(r.Body)
	var lines []string
	appended := false
	for len(lines) < 3 {
		l, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(l, "data: ") {
			lines = append(lines, strings.TrimSpace(strings.TrimPrefix(l, "data: ")))
		}
		if len(lines) == 2 && !appended {
			fh, _ := os.OpenFile(f.log, os.O_APPEND|os.O_WRONLY, 0)
			fh.WriteString("later\n")
			fh.Close()
			appended = true
		}
	}
	if lines[0] != `"hello"` || !strings.Contains(lines[1], "[REDACTED]") || lines[2] != `"later"` {
		t.Errorf("followed %q", lines)
	}
}

func TestCheckAddr(t *testing.T) {
	for addr, public := range map[string]bool{"127.0.0.1:7777": false, "localhost:1": false, "[::1]:80": false, "0.0.0.0:7777": true} {
		if err := CheckAddr(addr, public); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	if err := CheckAddr("0.0.0.0:7777", false); err == nil || !strings.Contains(err.Error(), "--listen-public") {
		t.Errorf("public address without --listen-public: %v", err)
	}
	if err := CheckAddr("7777", false); err == nil {
		t.Error("no host accepted")
	}
}

// With LANES the state lists each lane: the source's figures, and what the
// events tell (agents running on it, its cooldown). Without, no lanes.
func TestStateLanes(t *testing.T) {
	f := newFixture(t)
	var st State
	json.NewDecoder(f.do(t, "GET", "/api/v1/state", "tok", "", "").Body).Decode(&st)
	if st.Lanes != nil {
		t.Errorf("lanes without LANES: %+v", st.Lanes)
	}
	off := false
	f.srv.Model.SetLanes(func() []Lane {
		return []Lane{
			{ID: "claude", Mode: "always", Want: 3, Concurrency: 1, Why: "always"},
			{ID: "codex", Mode: "window", Want: 2, Concurrency: 2, Why: "behind by 50.0%", Off: off},
		}
	})
	now := time.Now()
	until := now.Add(time.Hour)
	for _, ev := range []scheduler.Event{
		{Kind: scheduler.EvLaunch, Phase: "b", State: "running", Role: state.Worker, Attempt: 1, Lane: "claude", Time: now},
		{Kind: scheduler.EvExit, Phase: "b", Role: state.Worker, Attempt: 1, Reason: state.ReasonExit, Time: now},
		{Kind: scheduler.EvCooldown, Phase: "b", Role: state.Worker, Until: until, Time: now},
		{Kind: scheduler.EvLaunch, Phase: "b", State: "running", Role: state.Worker, Attempt: 1, Lane: "codex", Time: now},
		{Kind: scheduler.EvLaunch, Phase: "c", State: "running", Role: state.Worker, Attempt: 1, Lane: "codex", Time: now},
	} {
		f.srv.Model.Apply(ev)
	}
	off = true
	json.NewDecoder(f.do(t, "GET", "/api/v1/state", "tok", "", "").Body).Decode(&st)
	want := []Lane{
		{ID: "claude", Mode: "always", Want: 3, Concurrency: 1, Why: "always", Running: 0, Cooldown: until},
		{ID: "codex", Mode: "window", Want: 2, Concurrency: 2, Why: "behind by 50.0%", Running: 2, Off: true},
	}
	if len(st.Lanes) != 2 {
		t.Fatalf("lanes %+v", st.Lanes)
	}
	for i, l := range st.Lanes {
		w := want[i]
		if l.ID != w.ID || l.Mode != w.Mode || l.Want != w.Want || l.Concurrency != w.Concurrency || l.Why != w.Why || l.Running != w.Running || l.Off != w.Off || !l.Cooldown.Equal(w.Cooldown) {
			t.Errorf("lane %d = %+v, want %+v", i, l, w)
		}
	}
}

// Next is the scheduler's rule (scheduler.Holds), not deps only: a phase
// below a LOOP-CHECKPOINT is next only under KEEP_GOING, and one waiting on
// an issue only once that issue merged (in the journal, or by an event).
func TestNextIsTheSchedulersRule(t *testing.T) {
	const src = `# Execution Manifest: next

## Phases

1. [pending] **a** — first (deps: none)
2. [pending] **i** — after issue 12 (deps: #12)

<!-- LOOP-CHECKPOINT: look -->

3. [pending] **z** — below (deps: none)
`
	rm, err := roadmap.Parse("/rm", []byte(src), nil, roadmap.Options{External: roadmap.IsIssueRef})
	if err != nil {
		t.Fatal(err)
	}
	if got := NewModel(rm, nil, state.Rules{}, false).State().Next; !slices.Equal(got, []string{"a"}) {
		t.Errorf("next %v, want [a]", got)
	}
	m := NewModel(rm, nil, state.Rules{KeepGoing: true}, false)
	if got := m.State().Next; !slices.Equal(got, []string{"a", "z"}) {
		t.Errorf("keep going: next %v, want [a z]", got)
	}
	m.Apply(scheduler.Event{Kind: scheduler.EvMerged, Phase: "#12", State: "merged", Time: time.Now()})
	if got := m.State().Next; !slices.Equal(got, []string{"a", "i", "z"}) {
		t.Errorf("#12 merged: next %v, want [a i z]", got)
	}
	hist, _ := state.History([]state.Record{{Phase: "#12", Event: "merged"}})
	if got := NewModel(rm, hist, state.Rules{}, false).State().Next; !slices.Equal(got, []string{"a", "i"}) {
		t.Errorf("#12 merged in the journal: next %v, want [a i]", got)
	}
}

// Outside nodes (the queue's issues, "#N") are rows like phases: those
// the journal names at start, and any other on its first event; an issue
// that left the driver's hands shows as away, with why.
func TestStateShowsOutsideNodes(t *testing.T) {
	const src = "# R\n\n1. [pending] **i** — after issue 3 (deps: #3)\n"
	rm, err := roadmap.Parse("/rm", []byte(src), nil, roadmap.Options{External: roadmap.IsIssueRef})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Hour)
	dime := 0.10
	hist, _ := state.History([]state.Record{
		{Time: t0, Phase: "#3", Event: "launch", Role: state.Worker, Attempt: 1},
		{Time: t0.Add(2 * time.Second), Phase: "#3", Event: "fail", Role: state.Worker, Attempt: 1, Reason: "gate", Detail: "red", Log: "/logs/3/worker-1.log"},
		{Phase: "#3", Event: "usage", Role: state.Worker, Usage: &ledger.Usage{CostUSD: &dime}},
		{Phase: "#3", Event: "blocked", Reason: "gate"},
		{Phase: "#5", Event: "away", Detail: "handed to a human for review"},
	})
	m := NewModel(rm, hist, state.Rules{}, false)
	row := func(st State, id string) Phase {
		t.Helper()
		for _, p := range st.Phases {
			if p.ID == id {
				return p
			}
		}
		t.Fatalf("no row %s in %+v", id, st.Phases)
		return Phase{}
	}
	st := m.State()
	p3 := row(st, "#3")
	if !p3.Outside || p3.State != "blocked" || p3.Attempts != 1 || p3.Reason != "gate" || p3.Log != "/logs/3/worker-1.log" || p3.Cost == nil || *p3.Cost != 0.10 || p3.Level != 0 || p3.Elapsed != 2 {
		t.Errorf("#3 from the journal: %+v", p3)
	}
	if p5 := row(st, "#5"); p5.State != "away" || p5.Detail != "handed to a human for review" {
		t.Errorf("#5 from the journal: %+v", p5)
	}
	if st.Counts["away"] != 1 || st.Counts["blocked"] != 1 || st.Cost == nil || *st.Cost != 0.10 {
		t.Errorf("counts %v, cost %v", st.Counts, st.Cost)
	}
	if p := row(st, "i"); p.Outside || !slices.Equal(p.Deps, []string{"#3"}) || p.Level != 1 {
		t.Errorf("i (after #3 in the graph): %+v", p)
	}

	// An issue's title and deps (EvNode) put it after what it waits on.
	m.Apply(scheduler.Event{Kind: scheduler.EvNode, Phase: "#3", Title: "Add the API", Deps: []string{"#5"}})
	st = m.State()
	if p3 := row(st, "#3"); p3.Title != "Add the API" || !slices.Equal(p3.Deps, []string{"#5"}) || p3.Level != 1 || row(st, "i").Level != 2 || row(st, "#5").Level != 0 {
		t.Errorf("#3 with its title and deps: %+v; i at level %d", p3, row(st, "i").Level)
	}

	// #7 was never seen: its first event brings it.
	now := time.Now()
	quarter := 0.25
	for _, ev := range []scheduler.Event{
		{Kind: scheduler.EvLaunch, Phase: "#7", State: "running", Role: state.Worker, Attempt: 1, Time: now},
	} {
		m.Apply(ev)
	}
	st = m.State()
	if p7 := row(st, "#7"); !p7.Outside || p7.State != "running" || p7.Activity != "worker" || p7.Attempts != 1 || !slices.Contains(st.Running, "#7") {
		t.Errorf("#7 launched: %+v, running %v", p7, st.Running)
	}
	for _, ev := range []scheduler.Event{
		{Kind: scheduler.EvExit, Phase: "#7", Role: state.Worker, Attempt: 1, Time: now.Add(3 * time.Second), LogPath: "/logs/7/worker-1.log", Usage: &ledger.Usage{CostUSD: &quarter}},
		{Kind: scheduler.EvMerging, Phase: "#7", Time: now},
	} {
		m.Apply(ev)
	}
	if p7 := row(m.State(), "#7"); p7.Activity != "merging" || p7.Log != "/logs/7/worker-1.log" || p7.Cost == nil || *p7.Cost != 0.25 || p7.Elapsed != 3 {
		t.Errorf("#7 merging: %+v", p7)
	}
	m.Apply(scheduler.Event{Kind: scheduler.EvMerged, Phase: "#7", State: "merged", Time: now})
	m.Apply(scheduler.Event{Kind: scheduler.EvAway, Phase: "#8", Detail: "closed on GitHub", Time: now})
	m.Apply(scheduler.Event{Kind: scheduler.EvLaunch, Phase: "#3", State: "running", Role: state.Worker, Attempt: 2, Time: now})
	m.Apply(scheduler.Event{Kind: scheduler.EvAway, Phase: "#3", Detail: "claimed by another instance", Time: now})
	st = m.State()
	if p7 := row(st, "#7"); p7.State != "merged" || p7.Activity != "" {
		t.Errorf("#7 merged: %+v", p7)
	}
	if p8 := row(st, "#8"); p8.State != "away" || p8.Detail != "closed on GitHub" || p8.Attempts != 0 {
		t.Errorf("#8 away: %+v", p8)
	}
	if p3 := row(st, "#3"); p3.State != "away" || p3.Detail != "claimed by another instance" || p3.Attempts != 2 || slices.Contains(st.Running, "#3") {
		t.Errorf("#3 away: %+v, running %v", p3, st.Running)
	}
	ids := []string{}
	for _, p := range st.Phases {
		ids = append(ids, p.ID)
	}
	if !slices.Equal(ids, []string{"i", "#3", "#5", "#7", "#8"}) {
		t.Errorf("rows %v, want the roadmap's, then issues in the order they came", ids)
	}
}

// The log pane goes through the driver's funnel: a secret the driver
// knows, raw, URL-escaped or base64-encoded, and every assignment of a
// stream-json line (they all start with "{", and hold several), whole or
// followed (#22 §2: only a .env line's first assignment was redacted).
func TestLogsThroughTheFunnel(t *testing.T) {
	f := newFixture(t)
	pw := "p@ss/w0rd+Zq8 x=1&y"
	f.srv.Redact = secret.NewRedactor([]string{"DEPLOY_PASSWORD=" + pw})
	forms := []string{pw, url.QueryEscape(pw), base64.StdEncoding.EncodeToString([]byte(pw))}
	text := "said " + strings.Join(forms, "\nsaid ") + "\n" +
		`{"type":"user","content":"API_KEY=q8Zt2LmWx0Pv\nDB_PASS=s3cr3tP4ssw0rd"}` + "\n"
	if err := os.WriteFile(f.log, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	gone := append(forms, "q8Zt2LmWx0Pv", "s3cr3tP4ssw0rd")
	resp := f.do(t, "GET", "/api/v1/logs/b?role=worker", "tok", "", "")
	b, _ := io.ReadAll(resp.Body)
	for _, g := range gone {
		if strings.Contains(string(b), g) {
			t.Errorf("the log pane shows %q:\n%s", g, b)
		}
	}
	if strings.Count(string(b), secret.Redacted) != 5 {
		t.Errorf("log:\n%s", b)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.ts.URL+"/api/v1/logs/b?follow=1", nil)
	req.Header.Set("Authorization", "Bearer tok")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	rd := bufio.NewReader(r.Body)
	for n := 0; n < 4; {
		l, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(l, "data: ") {
			continue
		}
		n++
		for _, g := range gone {
			if strings.Contains(l, g) {
				t.Errorf("followed %q", l)
			}
		}
	}
}

// Behind an HTTPS proxy the browser names the public origin: without
// LISTEN_ORIGIN every button's POST is refused (the check compares with
// http://<Host>); with it, that origin and the listen address's own pass,
// any other is still refused.
func TestListenOrigin(t *testing.T) {
	f := newFixture(t)
	const public = "https://pilot.example.com"
	if got := f.do(t, "POST", "/api/v1/actions", "tok", public, `{"action":"pause"}`).StatusCode; got != 403 {
		t.Errorf("proxied POST without LISTEN_ORIGIN: %d, want 403", got)
	}
	o, err := CheckOrigin("HTTPS://Pilot.example.com/")
	if err != nil || o != public {
		t.Fatalf("CheckOrigin: %q, %v", o, err)
	}
	f.srv.Origin = o
	for origin, want := range map[string]int{public: 200, f.ts.URL: 200, "https://evil.example.com": 403, "http://pilot.example.com": 403} {
		if got := f.do(t, "POST", "/api/v1/actions", "tok", origin, `{"action":"pause"}`).StatusCode; got != want {
			t.Errorf("POST from %s: %d, want %d", origin, got, want)
		}
	}
	for _, bad := range []string{"pilot.example.com", "https://pilot.example.com/claudopilot", "ftp://x", "https://", "https://u@x"} {
		if _, err := CheckOrigin(bad); err == nil || !strings.Contains(err.Error(), "LISTEN_ORIGIN") {
			t.Errorf("CheckOrigin(%q): %v", bad, err)
		}
	}
}

// The timeline is served as HTML drawn by the driver: journal texts (an
// issue's title is anyone's) escaped, attempts by role and lane, waits by
// reason, gates and merges marked; the report's file is the same drawing
// and needs nothing beside it (no script, no link).
func TestTimelineServedAndReport(t *testing.T) {
	f := newFixture(t)
	t0 := time.Date(2026, 12, 4, 22, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	recs := []state.Record{
		{Time: at(0), Event: "run"},
		{Time: at(0), Phase: "#7", Event: "node", Title: `<script>alert(1)</script>`, Deps: []string{"b"}},
		{Time: at(1), Phase: "b", Event: "launch", Role: state.Worker, Attempt: 1, Lane: "fast"},
		{Time: at(2), Phase: "b", Event: "gate", Role: state.Worker},
		{Time: at(3), Phase: "b", Event: "done", Role: state.Worker, Attempt: 1},
		{Time: at(4), Phase: "b", Event: "merged"},
	}
	tl := status.BuildTimeline(recs, []string{"a", "b", "c"}, nil, map[string][]string{"c": {"b"}}, map[string]bool{"a": true}, time.Time{})
	f.srv.Timeline = func() (status.Timeline, error) { return tl, nil }
	resp := f.do(t, "GET", "/api/v1/timeline", "tok", "", "")
	body, _ := io.ReadAll(resp.Body)
	page := string(body)
	for _, want := range []string{`class="tl-attempt" data-role="worker" data-lane="fast"`, `class="tl-wait" data-reason="dependency"`, `class="tl-gate" data-role="worker"`, `class="tl-merged"`, `&lt;script&gt;`, `class="tl-landing"`} {
		if !strings.Contains(page, want) {
			t.Errorf("timeline lacks %s:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<script>") {
		t.Error("an issue's title is not escaped")
	}
	var b strings.Builder
	if err := Report(&b, "claudopilot report: x/roadmap", tl, at(5)); err != nil {
		t.Fatal(err)
	}
	rep := b.String()
	if !strings.HasPrefix(rep, "<!doctype html>") || !strings.Contains(rep, `class="tl-attempt"`) || strings.Contains(rep, "<script") || strings.Contains(rep, " src=") || strings.Contains(rep, "href=") {
		t.Errorf("report is not one self-contained page:\n%s", rep)
	}
}

// An agent's question shows on its node with its time and deadline, and
// is counted as waiting on you; the answer action carries it to the
// driver; the answer clears it.
func TestQuestionAndAnswer(t *testing.T) {
	f := newFixture(t)
	now := time.Now().UTC().Truncate(time.Second)
	f.srv.Model.Apply(scheduler.Event{Kind: scheduler.EvLaunch, Phase: "b", State: "running", Role: state.Worker, Attempt: 1, Time: now})
	f.srv.Model.Apply(scheduler.Event{Kind: scheduler.EvExit, Phase: "b", Role: state.Worker, Attempt: 1, Reason: state.ReasonNeedsInput, Time: now})
	f.srv.Model.Apply(scheduler.Event{Kind: scheduler.EvAsk, Phase: "b", Detail: "which port?", Time: now, Until: now.Add(24 * time.Hour)})
	var st State
	json.NewDecoder(f.do(t, "GET", "/api/v1/state", "tok", "", "").Body).Decode(&st)
	b := st.Phases[1]
	if b.Question != "which port?" || !b.Asked.Equal(now) || !b.AnswerBy.Equal(now.Add(24*time.Hour)) || b.Activity != "waiting on you" || st.WaitingOnYou != 1 {
		t.Fatalf("b %+v, waiting on you %d", b, st.WaitingOnYou)
	}
	for body, want := range map[string]int{
		`{"action":"answer","id":"p1","text":"8080"}`: 200,
		`{"action":"answer","id":"p1"}`:               400,
		`{"action":"answer","id":"zz","text":"8080"}`: 409,
	} {
		if got := f.do(t, "POST", "/api/v1/actions", "tok", "", body).StatusCode; got != want {
			t.Errorf("%s: %d, want %d", body, got, want)
		}
	}
	if got := f.do(t, "POST", "/api/v1/actions", "tok", "", `{"action":"answer","id":"p1","text":"9090","asked":"2026-12-05T02:15:00Z"}`).StatusCode; got != 200 {
		t.Errorf("an answer naming its question: %d", got)
	}
	if !slices.Equal(f.acts.done, []string{"answer p1: 8080", "answer p1 asked 2026-12-05T02:15:00Z: 9090"}) {
		t.Errorf("actions %v", f.acts.done)
	}
	f.srv.Model.Apply(scheduler.Event{Kind: scheduler.EvAnswer, Phase: "b", Detail: "8080", Time: now})
	var after State
	json.NewDecoder(f.do(t, "GET", "/api/v1/state", "tok", "", "").Body).Decode(&after)
	if b := after.Phases[1]; b.Question != "" || b.Activity != "" || after.WaitingOnYou != 0 {
		t.Errorf("after the answer: %+v, waiting on you %d", b, after.WaitingOnYou)
	}
}

// An agent's terminal is served read-only as "screen" events (base64,
// redacted), then "end"; a node with none answers 404.
func TestScreenStream(t *testing.T) {
	f := newFixture(t)
	f.srv.Screen = func(id string) (io.ReadCloser, error) {
		if id != "b" {
			return nil, errors.New("no agent of " + id + " runs on a terminal now (ATTACH=1)")
		}
		return io.NopCloser(strings.NewReader("Proceed? \x1b[1m[y/N]\x1b[0m ")), nil
	}
	if got := f.do(t, "GET", "/api/v1/attach/c", "tok", "", "").StatusCode; got != 404 {
		t.Errorf("a node without a terminal: %d, want 404", got)
	}
	resp := f.do(t, "GET", "/api/v1/attach/b", "tok", "", "")
	body, _ := io.ReadAll(resp.Body)
	var screen []byte
	for _, l := range strings.Split(string(body), "\n") {
		if d, ok := strings.CutPrefix(l, "data: "); ok && d != "{}" {
			b, err := base64.StdEncoding.DecodeString(d)
			if err != nil {
				t.Fatal(err)
			}
			screen = append(screen, b...)
		}
	}
	if string(screen) != "Proceed? \x1b[1m[y/N]\x1b[0m " || !strings.Contains(string(body), "event: end") {
		t.Errorf("stream %q, screen %q", body, screen)
	}
	if got := f.do(t, "GET", "/api/v1/attach/b", "", "", "").StatusCode; got != 401 && got != 403 {
		t.Errorf("no token: %d", got)
	}
}

// An attempt that hit a usage limit is not a failure: its row waits on the
// limit (no reason "exit" from the exit before the cooldown).
func TestCooldownIsNoFailure(t *testing.T) {
	f := newFixture(t)
	now := time.Now()
	for _, ev := range []scheduler.Event{
		{Kind: scheduler.EvLaunch, Phase: "b", State: "running", Role: state.Worker, Attempt: 1, Time: now},
		{Kind: scheduler.EvExit, Phase: "b", Role: state.Worker, Attempt: 1, Reason: state.ReasonExit, Detail: "worker exited 1", Time: now},
		{Kind: scheduler.EvCooldown, Phase: "b", Role: state.Worker, Until: now.Add(time.Minute), Detail: "usage limit: no launches until 12:00", Time: now},
	} {
		f.srv.Model.Apply(ev)
	}
	for _, p := range f.srv.Model.State().Phases {
		if p.ID == "b" && (p.Reason != "" || p.Activity != "waiting: usage limit" || p.Detail == "") {
			t.Errorf("b after its usage limit: %+v", p)
		}
	}
}
