package queue

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/claudopilot/claudopilot/internal/chromepath"
	"github.com/claudopilot/claudopilot/internal/e2e"
)

// TestWebPageDrivesARun drives headless Chromium against a live run on
// fake agents: the page shows a phase go from running to merged, a click
// on Pause stops new launches, Resume starts them again, and the log pane
// shows an agent's output. The agents wait on a FIFO, not by polling a
// file (waitgrep's grep and sleep every 50 ms were a fifth of the test's
// CPU while the browser worked); the screenshot only when
// CLAUDOPILOT_SCREENSHOT asks for it. Under CLAUDOPILOT_SOAK=1 only: two
// thirds of its CPU was Chromium's (perf, load 20), and each of its
// properties has a cheaper proof in the default run (see the skip).
func TestWebPageDrivesARun(t *testing.T) {
	if !e2e.Soak() {
		t.Skip("proven by web TestPageTerminalAndQuestion (in Chromium: a running node and row, a pick shows the agent's screen, Drain, Pause and Resume reach the actions, PAUSED shown), " +
			"TestQueueListenServesIssues (a live driver's --listen: a running node in /api/v1/state, pause and resume taken by the running loop, the agent's log through the API, drain), " +
			"scheduler TestPauseResumeAndSlots (a pause stops launches, resume starts them) and web TestPageMorningView (states and the log pane in Chromium); CLAUDOPILOT_SOAK=1 runs it")
	}
	t.Parallel()
	agents := e2e.Agents(t)
	r := startWebRun(t, map[string]string{
		"roadmap/EXECUTION-MANIFEST.md": "# Web\n\n**Status:** in-progress\n\n1. [pending] **a** — held until the test lets go\n2. [pending] **b** — talks (deps: a)\n3. [pending] **c** — keeps the run going (deps: b)\n",
		"roadmap/c.md":                  "```worker\nread -r _ <\"$WORK/end.fifo\"\nwork\nfinish\n```\n",
		"roadmap/a.md":                  "```worker\nread -r _ <\"$WORK/go.fifo\"\nwork\nfinish\n```\n",
		"roadmap/b.md":                  "```worker\necho 'hello from b'\nwork\nfinish\n```\n",
	}, "--agent", filepath.Join(agents, "i4-doc.sh"), "--max-parallel", "1")
	journal := filepath.Join(r.repo, ".claudopilot", "state", "journal.jsonl")
	node := func(id, state string) string { return `g.node[data-id="` + id + `"][data-state="` + state + `"]` }
	r.run([]webStep{
		{"open the login URL", chromedp.Navigate(r.url)},
		{"a shows running", waitVisible(chromedp.CSS(node("a", "running")))},
		{"click Pause", click(chromedp.CSS("#btn-pause"))},
		{"the page says paused", waitVisible(chromedp.Search(`//span[@id="status"][contains(., "PAUSED")]`))},
		{"let a finish", r.let("go")},
		{"a shows merged", waitVisible(chromedp.CSS(node("a", "merged")))},
		{"b did not start while paused", do(func() error {
			jn, _ := os.ReadFile(journal)
			if strings.Contains(string(jn), `"phase":"b","ev":"launch"`) {
				t.Error("b launched while the run was paused")
			}
			return nil
		})},
		{"b shows pending", waitVisible(chromedp.CSS(node("b", "pending")))},
		{"click Resume", click(chromedp.CSS("#btn-resume"))},
		{"b shows merged", waitVisible(chromedp.CSS(node("b", "merged")))},
		{"pick b in the table", clickNow(`tr[data-id="b"]`)},
		{"the log pane shows b's output", waitVisible(chromedp.Search(`//div[@id="log"][contains(., "hello from b")]`))},
		{"c shows running", waitVisible(chromedp.CSS(node("c", "running")))},
	})
	r.screenshotIfAsked("page.png")
	r.run([]webStep{{"let c finish", r.let("end")}})
	r.finish("")
}

// TestWebPageLanes: with LANES the API lists each lane's figures and the
// page shows them in a table whose buttons switch a lane off and on, as
// `claudopilot lane off|on` does; the running driver's pacer takes the
// switch (codex's concurrency goes to 0 and back).
func TestWebPageLanes(t *testing.T) {
	if !e2e.Soak() {
		t.Skip("proven in package tests (web TestStateLanes and the lane_off/lane_on actions; the pacer's switch in control and scheduler); TestWebPageDrivesARun drives the page end to end; CLAUDOPILOT_SOAK=1 runs it")
	}
	t.Parallel()
	agents := e2e.Agents(t)
	doc := filepath.Join(agents, "i4-doc.sh")
	r := startWebRun(t, map[string]string{
		"claudopilot.config": "LANES=\"claude codex\"\nLANE_CLAUDE_CMD=" + doc + "\nLANE_CLAUDE_CONCURRENCY=1\n" +
			"LANE_CODEX_CMD=\"env LANE_TAG=codex " + doc + "\"\nLANE_CODEX_CONCURRENCY=1\nRESOURCE_PROBE_CMD=\"echo 64 0 640000\"\n",
		"roadmap/EXECUTION-MANIFEST.md": "# Web lanes\n\n**Status:** in-progress\n\n1. [pending] **a** — on claude (lane: claude)\n2. [pending] **b** — on codex (lane: codex)\n",
		"roadmap/a.md":                  "```worker\nwaitgrep \"$RELEASE\" go 120\nwork\nfinish\n```\n",
		"roadmap/b.md":                  "```worker\nwaitgrep \"$RELEASE\" go 120\nwork\nfinish\n```\n",
	})
	control := filepath.Join(r.repo, ".claudopilot", "state", "control.json")
	cell := func(lane, text string) chromedp.Action[chromedp.Void] {
		return waitVisible(chromedp.Search(`//tr[@data-lane="` + lane + `"]/td[3][normalize-space(.)="` + text + `"]`))
	}
	r.run([]webStep{
		{"open the login URL", chromedp.Navigate(r.url)},
		{"claude runs one of 1", cell("claude", "1 / 1")},
		{"codex runs one of 1", cell("codex", "1 / 1")},
		{"the API lists the lanes", do(func() error {
			st := r.state()
			if len(st.Lanes) != 2 || st.Lanes[0].ID != "claude" || st.Lanes[0].Mode != "always" || st.Lanes[0].Want != 1 ||
				st.Lanes[0].Concurrency != 1 || st.Lanes[0].Running != 1 || st.Lanes[1].ID != "codex" || st.Lanes[1].Off {
				t.Errorf("lanes in /api/v1/state: %+v", st.Lanes)
			}
			return nil
		})},
		{"click codex's Off", clickNow(`button[data-lane="codex"]`)},
		{"codex shows off", waitVisible(chromedp.CSS(`tr[data-lane="codex"][data-off="true"]`))},
		{"the switch is the command's file", do(func() error {
			b, _ := os.ReadFile(control)
			if !strings.Contains(string(b), `"codex"`) {
				t.Errorf("control.json does not switch codex off: %s", b)
			}
			return nil
		})},
		{"the pacer gives codex 0 slots; its agent goes on", cell("codex", "1 / 0")},
		{"click codex's On", clickNow(`button[data-lane="codex"]`)},
		{"codex shows on with its slot back", cell("codex", "1 / 1")},
	})
	r.screenshotIfAsked("lanes.png")
	r.finish("go\n")
	if out := r.cmd.Stdout.(*strings.Builder).String(); !strings.Contains(out, `"detail":"concurrency codex 1→0"`) || !strings.Contains(out, `"detail":"concurrency codex 0→1"`) {
		t.Errorf("no lanes events for the switch:\n%s", out)
	}
}

// webRun is a driver run with --listen on fake agents in a new repository,
// and a headless browser to look at it.
type webRun struct {
	t          *testing.T
	fifos      map[string]*os.File // go, end: see let
	dir, repo  string
	url, token string
	addr       string
	cmd        *exec.Cmd
	bctx       context.Context
}

type webStep struct {
	what string
	act  chromedp.Action[chromedp.Void]
}

// startWebRun commits files in a new repository and starts `claudopilot
// run roadmap --listen` there with args; its agents wait for lines in
// $RELEASE (r.finish) or read a line from $WORK/go.fifo or end.fifo (r.let).
func startWebRun(t *testing.T, files map[string]string, args ...string) *webRun {
	t.Helper()
	if testing.Short() {
		t.Skip("drives a browser against a live run")
	}
	browser := chromepath.Find()
	if browser == "" {
		t.Skip("no chromium on this machine (.ci/run installs Debian's chromium)")
	}
	r := &webRun{t: t, dir: t.TempDir()}
	r.repo = filepath.Join(r.dir, "repo")
	env := append(e2e.Env(filepath.Join(r.dir, "home"), filepath.Join(r.dir, "trace")), "RELEASE="+filepath.Join(r.dir, "release"), "WORK="+r.dir)
	for name, body := range files {
		p := filepath.Join(r.repo, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.fifos = map[string]*os.File{}
	for _, n := range []string{"go", "end"} {
		p := filepath.Join(r.dir, n+".fifo")
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		// Held open for reading and writing: an agent's read neither
		// blocks on the open nor meets the end of the file; what let
		// writes waits in the pipe for it. Closed with the test: a
		// waiting agent then reads the end and fails.
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		r.fifos[n] = f
	}
	e2e.Git(t, r.repo, env, "init", "-q", "-b", "main")
	e2e.Git(t, r.repo, env, "add", "-A")
	e2e.Git(t, r.repo, env, "commit", "-qm", "roadmap")

	ctx, cancel := context.WithTimeout(context.Background(), e2e.Bound(t)) // an upper bound
	t.Cleanup(cancel)
	r.cmd = exec.CommandContext(ctx, e2e.SelfAs(t, "claudopilot"), append([]string{"run", "roadmap", "--base", "main", "--listen", "127.0.0.1:0", "--json"}, args...)...)
	r.cmd.Dir, r.cmd.Env = r.repo, env
	stderr, _ := r.cmd.StderrPipe()
	r.cmd.Stdout = new(strings.Builder)
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			r.cmd.Process.Kill()
			r.cmd.Wait()
		}
	})
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := regexp.MustCompile(`web page: (http://(\S+)/login\?code=\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			r.url, r.addr = m[1], m[2]
			break
		}
	}
	if r.url == "" {
		t.Fatal("the driver printed no login URL")
	}
	go func() { // keep the pipe drained
		for sc.Scan() {
		}
	}()
	tok, err := os.ReadFile(filepath.Join(r.repo, ".claudopilot", "state", "web-token"))
	if err != nil {
		t.Fatal(err)
	}
	r.token = strings.TrimSpace(string(tok))

	r.bctx = chromium.tab(t, browser)
	return r
}

// chromium is the package's one headless Chromium, shared by its browser
// tests, each in a browser context of its own (cookies apart: every run's
// page is on 127.0.0.1, whose cookies all ports share) and its own tab.
// The first test that needs it starts it; TestMain closes it. A start of
// its own per test cost each about 1.4 s of CPU and 4.5-7.5 s of wall at
// load 23 (chromium --headless --dump-dom about:blank; #23).
var chromium sharedChromium

type sharedChromium struct {
	once   sync.Once
	ctx    context.Context // the browser's first tab
	cancel func()
	err    error
}

// tab opens a tab of the shared browser (exe) in a new browser context,
// closed when the test ends.
func (c *sharedChromium) tab(t *testing.T, exe string) context.Context {
	t.Helper()
	c.once.Do(func() {
		actx, acancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.WindowSize(420, 900))...)
		bctx, bcancel := chromedp.NewContext(actx)
		c.ctx, c.cancel = bctx, func() { bcancel(); acancel() }
		// The first Run starts the browser; its context is the
		// browser's lifetime, so it has no timeout of its own.
		_, c.err = chromedp.Run(bctx, do(func() error { return nil }))
	})
	if c.err != nil {
		t.Fatalf("start %s: %v", exe, c.err)
	}
	ctx, cancel := chromedp.NewContext(c.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	return ctx
}

// close ends the browser, if one was started.
func (c *sharedChromium) close() {
	if c.cancel != nil {
		c.cancel()
	}
}

// domPoll is how often a wait for an element asks the page again.
// chromedp's default, 5 ms, kept this test process and Chromium's
// browser, renderer and DevTools threads busy for as long as a step waited
// on the driver (about 200 DOM queries a second): most of
// TestWebPageDrivesARun's CPU.
const domPoll = 50 * time.Millisecond

// waitVisible waits until sel is visible, asking every domPoll.
func waitVisible[S chromedp.Selectable](sel S) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(sel, chromedp.RetryInterval(domPoll))
}

// click clicks sel once it is visible, asking every domPoll.
func click[S chromedp.Selectable](sel S) chromedp.Action[chromedp.Void] {
	return chromedp.Click(sel, chromedp.RetryInterval(domPoll))
}

func do(f func() error) chromedp.Action[chromedp.Void] {
	return func(context.Context, *chromedp.Target) (chromedp.Void, error) { return chromedp.Void{}, f() }
}

// clickNow clicks the element sel finds, in one step inside the page.
// The tables are drawn anew at each refresh: chromedp.Click finds a row,
// then clicks it, and a refresh between the two leaves it clicking a node
// that is gone ("Could not find node with given id", seen once in four
// runs of TestWebPageDrivesARun).
func clickNow(sel string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		if _, err := waitVisible(chromedp.CSS(sel))(ctx, t); err != nil {
			return chromedp.Void{}, err
		}
		ok, err := chromedp.Evaluate[bool](fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true; })()`, sel))(ctx, t)
		if err == nil && !ok {
			err = fmt.Errorf("%s: gone before the click", sel)
		}
		return chromedp.Void{}, err
	}
}

// let lets one agent waiting on the FIFO $WORK/<name>.fifo go on
// (read -r _ <"$WORK/<name>.fifo": a wait without polling).
func (r *webRun) let(name string) chromedp.Action[chromedp.Void] {
	return do(func() error {
		_, err := r.fifos[name].WriteString(name + "\n")
		return err
	})
}

// run runs the steps in order, each with an upper bound of its own; on a
// failure it saves a screenshot and stops the test.
func (r *webRun) run(steps []webStep) {
	r.t.Helper()
	for i, s := range steps {
		sctx, scancel := r.bctx, context.CancelFunc(func() {})
		if i > 0 { // the first Run opens the tab: no timeout on it
			sctx, scancel = context.WithTimeout(r.bctx, 90*time.Second) // an upper bound
		}
		_, err := chromedp.Run(sctx, s.act)
		scancel()
		if err != nil {
			png, _ := chromedp.Run(r.bctx, chromedp.FullScreenshot(100))
			os.WriteFile(filepath.Join(r.dir, "failed.png"), png, 0o644)
			if p := os.Getenv("CLAUDOPILOT_SCREENSHOT"); p != "" {
				os.WriteFile(p, png, 0o644)
			}
			r.t.Fatalf("%s: %v\ndriver stdout:\n%s", s.what, err, r.cmd.Stdout)
		}
		r.t.Logf("ok: %s", s.what)
	}
}

// screenshot saves the page as name in the test's folder (and at
// $CLAUDOPILOT_SCREENSHOT, to look at it: CLAUDOPILOT_SCREENSHOT=/tmp/page.png
// go test -run TestWebPage).
func (r *webRun) screenshot(name string) {
	r.t.Helper()
	png, err := chromedp.Run(r.bctx, chromedp.FullScreenshot(100))
	if err != nil {
		r.t.Fatal(err)
	}
	shot := filepath.Join(r.dir, name)
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		r.t.Fatal(err)
	}
	if p := os.Getenv("CLAUDOPILOT_SCREENSHOT"); p != "" {
		os.WriteFile(p, png, 0o644)
	}
	r.t.Logf("screenshot: %s", shot)
}

// screenshotIfAsked saves the page as screenshot does, only when
// CLAUDOPILOT_SCREENSHOT asks for it: the test's folder is removed at its
// end, and a full-page PNG costs CPU.
func (r *webRun) screenshotIfAsked(name string) {
	r.t.Helper()
	if os.Getenv("CLAUDOPILOT_SCREENSHOT") != "" {
		r.screenshot(name)
	}
}

// finish releases the agents with lines and waits for the run to end well.
func (r *webRun) finish(lines string) {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, "release"), []byte(lines), 0o644); err != nil {
		r.t.Fatal(err)
	}
	if err := r.cmd.Wait(); err != nil {
		r.t.Fatalf("run: %v\n%s", err, r.cmd.Stdout)
	}
}

// webState is the part of GET /api/v1/state these tests read.
type webState struct {
	Lanes []struct {
		ID          string `json:"id"`
		Mode        string `json:"mode"`
		Want        int    `json:"want"`
		Concurrency int    `json:"concurrency"`
		Running     int    `json:"running"`
		Off         bool   `json:"switched_off"`
	} `json:"lanes"`
}

// state reads GET /api/v1/state with the API token, as a script would.
func (r *webRun) state() webState {
	r.t.Helper()
	req, _ := http.NewRequest("GET", "http://"+r.addr+"/api/v1/state", nil)
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var st webState
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		r.t.Fatal(err)
	}
	return st
}
