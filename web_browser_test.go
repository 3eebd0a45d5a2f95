package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestWebPageDrivesARun drives headless Chromium against a live run on
// fake agents: the page shows a phase go from running to merged, a click
// on Pause stops new launches, Resume starts them again, and the log pane
// shows an agent's output. It saves a screenshot in the test's folder.
func TestWebPageDrivesARun(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser against a live run")
	}
	browser := findChromium()
	if browser == "" {
		t.Skip("no chromium on this machine (.ci/run installs Debian's chromium)")
	}
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	env := append(crashEnv(filepath.Join(dir, "home"), filepath.Join(dir, "trace")), "RELEASE="+filepath.Join(dir, "release-a"), "WORK="+dir)
	agents, _ := filepath.Abs(filepath.Join("testdata", "agents"))
	files := map[string]string{
		"roadmap/EXECUTION-MANIFEST.md": "# Web\n\n**Status:** in-progress\n\n1. [pending] **a** — held until the test lets go\n2. [pending] **b** — talks (deps: a)\n3. [pending] **c** — keeps the run going (deps: b)\n",
		"roadmap/c.md":                  "```worker\nwaitgrep \"$RELEASE\" end 120\nwork\nfinish\n```\n",
		"roadmap/a.md":                  "```worker\nwaitgrep \"$RELEASE\" go 120\nwork\nfinish\n```\n",
		"roadmap/b.md":                  "```worker\necho 'hello from b'\nwork\nfinish\n```\n",
	}
	for name, body := range files {
		p := filepath.Join(repo, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, env, "init", "-q", "-b", "main")
	git(t, repo, env, "add", "-A")
	git(t, repo, env, "commit", "-qm", "roadmap")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // an upper bound
	defer cancel()
	cmd := exec.CommandContext(ctx, selfAs(t, "claudopilot"), "run", "roadmap", "--base", "main", "--agent", filepath.Join(agents, "i4-doc.sh"),
		"--max-parallel", "1", "--listen", "127.0.0.1:0", "--json")
	cmd.Dir, cmd.Env = repo, env
	stderr, _ := cmd.StderrPipe()
	cmd.Stdout = new(strings.Builder)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	url := ""
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := regexp.MustCompile(`web page: (http://\S+/login\?code=\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
			break
		}
	}
	if url == "" {
		t.Fatal("the driver printed no login URL")
	}
	go func() { // keep the pipe drained
		for sc.Scan() {
		}
	}()

	actx, acancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.WindowSize(420, 900))...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	journal := filepath.Join(repo, ".claudopilot", "state", "journal.jsonl")
	node := func(id, state string) string { return `g.node[data-id="` + id + `"][data-state="` + state + `"]` }

	do := func(f func() error) chromedp.Action[chromedp.Void] {
		return func(context.Context, *chromedp.Target) (chromedp.Void, error) { return chromedp.Void{}, f() }
	}
	steps := []struct {
		what string
		act  chromedp.Action[chromedp.Void]
	}{
		{"open the login URL", chromedp.Navigate(url)},
		{"a shows running", chromedp.WaitVisible(chromedp.CSS(node("a", "running")))},
		{"click Pause", chromedp.Click(chromedp.CSS("#btn-pause"))},
		{"the page says paused", chromedp.WaitVisible(chromedp.Search(`//span[@id="status"][contains(., "PAUSED")]`))},
		{"let a finish", do(func() error { return os.WriteFile(filepath.Join(dir, "release-a"), []byte("go\n"), 0o644) })},
		{"a shows merged", chromedp.WaitVisible(chromedp.CSS(node("a", "merged")))},
		{"b did not start while paused", do(func() error {
			jn, _ := os.ReadFile(journal)
			if strings.Contains(string(jn), `"phase":"b","ev":"launch"`) {
				t.Error("b launched while the run was paused")
			}
			return nil
		})},
		{"b shows pending", chromedp.WaitVisible(chromedp.CSS(node("b", "pending")))},
		{"click Resume", chromedp.Click(chromedp.CSS("#btn-resume"))},
		{"b shows merged", chromedp.WaitVisible(chromedp.CSS(node("b", "merged")))},
		{"pick b in the table", chromedp.Click(chromedp.CSS(`tr[data-id="b"]`))},
		{"the log pane shows b's output", chromedp.WaitVisible(chromedp.Search(`//pre[@id="log"][contains(., "hello from b")]`))},
		{"c shows running", chromedp.WaitVisible(chromedp.CSS(node("c", "running")))},
	}
	for i, s := range steps {
		sctx, scancel := bctx, context.CancelFunc(func() {})
		if i > 0 { // the first Run starts the browser: no timeout on it
			sctx, scancel = context.WithTimeout(bctx, 90*time.Second) // an upper bound
		}
		_, err := chromedp.Run(sctx, s.act)
		scancel()
		if err != nil {
			png, _ := chromedp.Run(bctx, chromedp.FullScreenshot(100))
			os.WriteFile(filepath.Join(dir, "failed.png"), png, 0o644)
			if p := os.Getenv("CLAUDOPILOT_SCREENSHOT"); p != "" {
				os.WriteFile(p, png, 0o644)
			}
			t.Fatalf("%s: %v\ndriver stdout:\n%s", s.what, err, cmd.Stdout)
		}
		t.Logf("ok: %s", s.what)
	}
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "page.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	if p := os.Getenv("CLAUDOPILOT_SCREENSHOT"); p != "" {
		os.WriteFile(p, png, 0o644) // to look at it: CLAUDOPILOT_SCREENSHOT=/tmp/page.png go test -run TestWebPage
	}
	t.Logf("screenshot: %s", shot)
	if err := os.WriteFile(filepath.Join(dir, "release-a"), []byte("go\nend\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, cmd.Stdout)
	}
}

func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}
