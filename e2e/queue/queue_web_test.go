package queue

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/claudopilot/claudopilot/internal/chromepath"
	"github.com/claudopilot/claudopilot/internal/e2e"
	"github.com/claudopilot/claudopilot/issues/ghfake"
	"github.com/claudopilot/claudopilot/web"
)

// queue --listen without a roadmap serves the page and the API: the issue
// is a node of /api/v1/state while its agent runs (and, with chromium under
// CLAUDOPILOT_SOAK=1, a running node of the page's graph and a row of its
// table); pause and resume reach the running loop (the state follows its
// paused and resumed events); the agent's output is in its log, followed
// live (the log pane's source); and a drain (the page's button under soak;
// the API's by default) reaches the queue's scheduler through the same
// control.json switches as a run's: the issue's work still merges, then
// the queue ends, exit 0. By default no browser starts here: web
// TestPageTerminalAndQuestion shows an issue's node in the graph and the
// table and clicks Drain, Pause and Resume in Chromium;
// TestWebPageDrivesARun drives the page against a live run under soak.
func TestQueueListenServesIssues(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the driver against a fake GitHub")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	t.Parallel()
	bin := e2e.SelfAs(t, "claudopilot")
	dir := t.TempDir()
	env := e2e.Env(dir, filepath.Join(dir, "trace"))
	origin := filepath.Join(dir, "origin.git")
	seedOrigin(t, env, origin, "init", map[string]string{"a.txt": "a\n"})
	fake := fakeGitHub(t, origin, env, "tok-123")
	fake.SetCI(func(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
		return []ghfake.CheckRun{{Name: "ci/test", Status: "completed", Conclusion: "success"}}, nil
	})
	fake.NewIssue("alice", "Add the API", "Write work/issue.txt.", []string{"agent-ready"}, "alice")
	work := filepath.Join(dir, "work")
	e2e.Git(t, dir, env, "clone", "-q", origin, work)
	// The agent holds until the test lets it go: it reads a line from a
	// FIFO the test holds open (no polling; the test's end closes it, and
	// the agent's read then fails).
	release := filepath.Join(dir, "release")
	if err := syscall.Mkfifo(release, 0o600); err != nil {
		t.Fatal(err)
	}
	hold, err := os.OpenFile(release, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hold.Close() })
	agent := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(agent, []byte(`#!/bin/sh
set -e
echo "hello from the issue's agent"
read -r _ <"$RELEASE"
mkdir -p work && echo issue > work/issue.txt
git add -A && git commit -qm "issue work"
`), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), e2e.Bound(t)) // an upper bound
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "queue", "--base", "main", "--agent", agent, "--max-supervisor-attempts", "0",
		"--poll-seconds", "1", "--listen", "127.0.0.1:0")
	cmd.Dir = work
	// REFILL_THRESHOLD=0: a polling queue with one issue would run a
	// scanner (this agent, held until the release) beside the issue's.
	cmd.Env = append(env, "GITHUB_TOKEN=tok-123", "GITHUB_API_URL="+fake.URL(), "GH_REPO=acme/widgets", "AUTO_MERGE=1", "RELEASE="+release, "REFILL_THRESHOLD=0")
	// out is stderr, read by this test; stdout has the summary.
	var out, sum bytes.Buffer
	cmd.Stdout = &sum
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	sc := bufio.NewScanner(stderr)
	addr, login := "", ""
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if m := regexp.MustCompile(`web page: (http://(\S+)/login\?code=\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			login, addr = m[1], m[2]
			break
		}
	}
	if addr == "" {
		t.Fatalf("the queue printed no login URL:\n%s", out.String())
	}
	drained := make(chan struct{})
	go func() { // keep the pipe drained
		defer close(drained)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
		}
	}()
	tok, err := os.ReadFile(filepath.Join(work, ".claudopilot", "state", "web-token"))
	if err != nil {
		t.Fatal(err)
	}
	bearer := "Bearer " + strings.TrimSpace(string(tok))
	call := func(method, path, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", bearer)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return resp
	}
	// Each event of the stream is a reason to read the state again.
	events := call("GET", "/api/v1/events", "")
	defer events.Body.Close()
	evs := bufio.NewScanner(events.Body)
	waitState := func(what string, ok func(web.State) bool) web.State {
		t.Helper()
		for {
			var st web.State
			resp := call("GET", "/api/v1/state", "")
			err := json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("state: %v", err)
			}
			if ok(st) {
				return st
			}
			for evs.Scan() && evs.Text() != "" { // to the end of the next event
			}
			if evs.Err() != nil || ctx.Err() != nil {
				t.Fatalf("waiting for %s: %v\n%s", what, evs.Err(), out.String())
			}
		}
	}
	issue := func(st web.State) web.Phase {
		for _, p := range st.Phases {
			if p.ID == "#1" {
				return p
			}
		}
		return web.Phase{}
	}
	st := waitState("#1 running", func(st web.State) bool { return issue(st).Activity == "worker" })
	if p := issue(st); !p.Outside || p.State != "running" || p.Attempts != 1 || len(st.Running) != 1 || st.Running[0] != "#1" {
		t.Errorf("#1 in the state: %+v, running %v", p, st.Running)
	}
	// Pause and Resume reach the running queue's loop: the state says
	// paused only once the loop has taken the switch (its paused event),
	// and not paused once it has taken the resume.
	for _, a := range []struct {
		action string
		paused bool
	}{{"pause", true}, {"resume", false}} {
		if resp := call("POST", "/api/v1/actions", `{"action":"`+a.action+`"}`); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", a.action, resp.Status)
		}
		waitState(a.action, func(st web.State) bool { return st.Paused == a.paused })
	}
	// The log pane's source: the running agent's output, through the API
	// once the agent has said it (its log file is where the driver writes
	// it: the API must find the same).
	waitForText(t, filepath.Join(work, ".claudopilot", "logs", "%231", "worker-1.log"), "hello from the issue's agent", e2e.Bound(t))
	logs := call("GET", "/api/v1/logs/%231?role=worker", "")
	b, _ := io.ReadAll(logs.Body)
	logs.Body.Close()
	if logs.StatusCode != http.StatusOK || !strings.Contains(string(b), "hello from the issue's agent") {
		t.Errorf("the log of #1 through the API (%s):\n%s", logs.Status, b)
	}
	if browser := chromepath.Find(); browser != "" && e2e.Soak() {
		// The page shows the issue in the graph and the table, and its
		// Drain button reaches the queue.
		bctx := chromium.tab(t, browser)
		for i, step := range []struct {
			what string
			act  chromedp.Action[chromedp.Void]
		}{
			{"open the login URL", chromedp.Navigate(login)},
			{"#1 is a running node of the graph", waitVisible(chromedp.CSS(`g.node[data-id="#1"][data-state="running"]`))},
			{"#1 is a row of the table", waitVisible(chromedp.CSS(`tr[data-id="#1"] td.state.running`))},
			{"click Drain (and say yes)", clickYes("#btn-drain")},
		} {
			sctx, scancel := bctx, context.CancelFunc(func() {})
			if i > 0 { // the first Run opens the tab: no timeout of its own
				sctx, scancel = context.WithTimeout(bctx, 90*time.Second) // an upper bound
			}
			_, err := chromedp.Run(sctx, step.act)
			scancel()
			if err != nil {
				png, _ := chromedp.Run(bctx, chromedp.FullScreenshot(100))
				os.WriteFile(filepath.Join(dir, "failed.png"), png, 0o644)
				t.Fatalf("page: %s: %v\n%s", step.what, err, out.String())
			}
			t.Logf("ok: %s", step.what)
		}
		if p := os.Getenv("CLAUDOPILOT_SCREENSHOT"); p != "" {
			png, _ := chromedp.Run(bctx, chromedp.FullScreenshot(100))
			os.WriteFile(p, png, 0o644)
		}
	} else if resp := call("POST", "/api/v1/actions", `{"action":"drain"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("drain: %s", resp.Status)
	}
	waitState("draining", func(st web.State) bool { return st.Draining })
	if _, err := hold.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	<-drained // before Wait, which closes the pipe
	err = cmd.Wait()
	out.Write(sum.Bytes())
	if err != nil {
		t.Fatalf("queue --listen: %v\n%s", err, out.String())
	}
	// The scheduler's "drained: …" counts the roadmap's phases (none
	// here); the queue's summary counts the issues.
	if !strings.Contains(out.String(), "drained:") || !strings.Contains(sum.String(), "queue: 1 merged") {
		t.Errorf("no drain, or no issue merged:\n%s", out.String())
	}
	if is, ok := fake.Issue(1); !ok || is.State != "closed" {
		t.Errorf("issue #1 = %+v, want closed by its merged pull request\n%s", is, out.String())
	}
}

// clickYes clicks the element sel finds, answering yes to the confirm()
// it asks (the Drain button's).
func clickYes(sel string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		if _, err := waitVisible(chromedp.CSS(sel))(ctx, t); err != nil {
			return chromedp.Void{}, err
		}
		_, err := chromedp.Evaluate[bool](fmt.Sprintf(`(() => { window.confirm = () => true; document.querySelector(%q).click(); return true; })()`, sel))(ctx, t)
		return chromedp.Void{}, err
	}
}
