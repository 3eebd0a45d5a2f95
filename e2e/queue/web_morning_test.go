package queue

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/claudopilot/claudopilot/internal/e2e"
)

var readmeShot = flag.Bool("readme-screenshot", false, "TestWebPageMorning writes the README's screenshot, docs/images/page.png")

// TestWebPageMorning is the page a morning after a night's run, in
// Chromium: an agent's stream-json output reads as a transcript, a phase
// parked on a red gate opens on the gate's failing output, the timeline
// draws the attempts and gates, a usage limit counts down to its reset,
// an agent's question waits on you and is answered in its box, and at 1280 and 420 px wide nothing is
// wider than the window (document.scrollingElement.scrollWidth <=
// innerWidth, no table wider than its box, and a full-page screenshot no
// wider than the window). With -readme-screenshot it writes the README's
// picture of the page (it runs then, or under CLAUDOPILOT_SOAK=1; by
// default web's TestPageMorningView checks the same page against a
// recorded night, #23):
//
//	go test -run TestWebPageMorning -readme-screenshot .
func TestWebPageMorning(t *testing.T) {
	if !e2e.Soak() && !*readmeShot {
		t.Skip("proven by TestPageMorningView (web): the same page checks against a recorded night in Chromium; the driver's usage limit, question and answer by scripts fail_rate_limit and needs_input_hostile; TestWebPageDrivesARun drives the page against a live run; CLAUDOPILOT_SOAK=1 runs it")
	}
	t.Parallel()
	agents := e2e.Agents(t)
	talk := claudeSample(t)
	r := startWebRun(t, map[string]string{
		"roadmap/EXECUTION-MANIFEST.md": "# Morning\n\n**Status:** in-progress\n\n" +
			"1. [pending] **contracts** — shared types and the API contract\n" +
			"2. [pending] **api-handlers** — HTTP handlers for the new endpoints (deps: contracts)\n" +
			"3. [pending] **storage** — storage layer and its migrations (deps: contracts)\n" +
			"4. [pending] **cli** — command line for the new endpoints (deps: api-handlers)\n" +
			"5. [pending] **docs** — user docs, still being written (deps: storage)\n" +
			"6. [pending] **search** — search index; hits the usage limit once (deps: storage)\n" +
			"7. [pending] **schema** — the store's schema; its agent asks which database (deps: contracts)\n",
		"roadmap/talk.jsonl":      talk,
		"gate.sh":                 "if grep -qs BAD work/*.txt; then echo '--- FAIL: TestHandlers (0.02s)'; echo '    handlers_test.go:41: GET /v2/items: got 500, want 200'; echo FAIL; exit 1; fi\necho ok\n",
		"roadmap/contracts.md":    "```worker\ncat roadmap/talk.jsonl\nwork\nfinish\n```\n",
		"roadmap/api-handlers.md": "```worker\ncat roadmap/talk.jsonl\nwork BAD\nfinish\n```\n\n```supervisor\necho \"cannot see what is wrong\"\n```\n",
		"roadmap/storage.md":      "```worker\ncat roadmap/talk.jsonl\nwork\nfinish\n```\n",
		"roadmap/docs.md":         "```worker\nwaitgrep \"$RELEASE\" end 120\nwork\nfinish\n```\n",
		"roadmap/search.md":       "```worker\nif [ ! -e \"$WORK/limit-hit\" ]; then touch \"$WORK/limit-hit\"; echo 'Usage limit reached, retry in 15 seconds'; exit 1; fi\nwork\nfinish\n```\n",
		"roadmap/schema.md":       "```worker\nif [ ! -e \"$WORK/asked\" ]; then touch \"$WORK/asked\"; echo 'CLAUDOPILOT-NEEDS-INPUT: Postgres or SQLite for the store?'; exit 0; fi\nwork\nfinish\n```\n",
		"roadmap/cli.md":          "```worker\nwork\nfinish\n```\n",
	}, "--agent", filepath.Join(agents, "i4-doc.sh"), "--gate", "sh gate.sh", "--max-parallel", "3", "--max-supervisor-attempts", "1", "--keep-going")
	node := func(id, state string) string { return `g.node[data-id="` + id + `"][data-state="` + state + `"]` }
	r.run([]webStep{
		{"open the login URL", chromedp.Navigate(r.url)},
		{"window 1280 wide", chromedp.EmulateViewport(1280, 900)},
		{"storage merged", waitVisible(chromedp.CSS(node("storage", "merged")))},
		{"api-handlers parked on its red gate", waitVisible(chromedp.CSS(node("api-handlers", "blocked")))},
		{"docs runs", waitVisible(chromedp.CSS(node("docs", "running")))},
		{"search's usage limit holds launches, counting down", waitVisible(chromedp.Search(`//div[@id="holds"]/div[contains(., "Usage limit")][contains(., "resets in")]`))},
		{"the countdown shows minutes and seconds", do(func() error { return r.expect(`/^0:[0-2][0-9]$/.test($("#holds b[data-until]").textContent)`) })},
		{"schema's question waits on you", waitVisible(chromedp.Search(`//div[@id="holds"]/div[contains(., "Waiting on you")][contains(., "Postgres or SQLite")]`))},
		{"the header counts it", waitVisible(chromedp.Search(`//span[@id="status"][contains(., "1 waiting on you")]`))},
		{"pick api-handlers", clickNow(`tr[data-id="api-handlers"]`)},
		{"its pane opens on the gate's failing output", waitVisible(chromedp.Search(`//div[@id="log"][contains(., "got 500, want 200")]`))},
		{"the gate log is the one chosen", do(func() error { return r.expect(`$("#logsel").selectedOptions[0].textContent.includes("gate")`) })},
		{"pick contracts", clickNow(`tr[data-id="contracts"]`)},
		{"no answer box for a node that asks nothing", do(func() error { return r.expect(`getComputedStyle($("#askform")).display === "none"`) })},
		{"its output reads as a transcript", waitVisible(chromedp.Search(`//div[@id="log"]//*[contains(@class,"tx-tool")][contains(., "go test ./...")]`))},
		{"the assistant's text", waitVisible(chromedp.Search(`//div[@id="log"][contains(., "Fixed the off-by-one in Parse")]`))},
		{"the timeline draws attempts and gates", waitVisible(chromedp.CSS(`#timeline svg.timeline .tl-attempt[data-role="supervisor"]`))},
		{"the timeline marks gates", do(func() error { return r.expect(`document.querySelectorAll("#timeline .tl-gate").length >= 3`) })},
		{"the timeline shades search's cooldown", waitVisible(chromedp.CSS(`#timeline .tl-wait[data-reason="cooldown"]`))},
		{"fits at 1280", r.fits(1280)},
	})
	r.shotAt(1280, "page-1280.png")
	if *readmeShot {
		r.readme()
	}
	r.run([]webStep{{"fits at 420", r.fits(420)}})
	r.shotAt(420, "page-420.png")
	r.run([]webStep{
		{"window 1280 wide again", chromedp.EmulateViewport(1280, 900)},
		{"open schema's question", clickNow(`#holds button[data-ask="schema"]`)},
		{"the box shows it", waitVisible(chromedp.Search(`//div[@id="question"][contains(., "Postgres or SQLite for the store?")]`))},
		{"type the answer", chromedp.SendKeys(chromedp.CSS("#answer"), "SQLite")},
		{"answer", clickNow("#btn-answer")},
		{"schema goes on and merges", waitVisible(chromedp.CSS(node("schema", "merged")))},
		{"nothing waits on you", do(func() error { return r.expect(`!document.querySelector("#holds .ask") && $("#askform").hidden`) })},
	})
	if err := os.WriteFile(filepath.Join(r.dir, "release"), []byte("end\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// --keep-going ends with parked phases: exit 8.
	if err := r.cmd.Wait(); r.cmd.ProcessState.ExitCode() != 8 {
		t.Fatalf("run: %v, want exit 8\n%s", err, r.cmd.Stdout)
	}
}

// claudeSample is the log of transcript's Claude Code fixture (its source
// is named there).
func claudeSample(t *testing.T) string {
	ar, err := txtar.ParseFile(filepath.Join(e2e.Root(t), "transcript", "testdata", "claude-tools.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ar.Files {
		if f.Name == "log" {
			return string(f.Data)
		}
	}
	t.Fatal("no log in claude-tools.txtar")
	return ""
}

// expect fails the step when the page's expression js is not true.
func (r *webRun) expect(js string) error {
	ok, err := chromedp.Run(r.bctx, chromedp.Evaluate[bool](js))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("not true on the page: %s", js)
	}
	return nil
}

// fits sets the window w px wide and checks that nothing is wider: the
// page (scrollWidth <= innerWidth) and every table in its box.
func (r *webRun) fits(w int64) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		if _, err := chromedp.EmulateViewport(w, 900)(ctx, tg); err != nil {
			return chromedp.Void{}, err
		}
		js := `(() => { const clipped = [];
			document.querySelectorAll("table, svg, pre, .tablewrap, section").forEach((e) => {
				const box = e.closest(".tablewrap") || e.parentElement;
				if (e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 0 || e.getBoundingClientRect().right > box.getBoundingClientRect().right + 1)
					clipped.push((e.id || e.className.baseVal || e.className || e.tagName) + " " + e.scrollWidth + ">" + e.clientWidth);
			});
			return {Scroll: document.scrollingElement.scrollWidth, Inner: innerWidth, Clipped: clipped}; })()`
		got, err := chromedp.Evaluate[fitFigures](js)(ctx, tg)
		if err != nil {
			return chromedp.Void{}, err
		}
		if got.Scroll > got.Inner || len(got.Clipped) > 0 {
			return chromedp.Void{}, fmt.Errorf("at %d px: scrollWidth %d, innerWidth %d, clipped %v", w, got.Scroll, got.Inner, got.Clipped)
		}
		return chromedp.Void{}, nil
	}
}

// fitFigures are what fits measures on the page.
type fitFigures struct {
	Scroll, Inner int
	Clipped       []string
}

// shotAt saves a full-page screenshot at width w and checks it for
// overflow: a page wider than the window makes a wider picture.
func (r *webRun) shotAt(w int, name string) {
	r.t.Helper()
	r.screenshot(name)
	b, err := os.ReadFile(filepath.Join(r.dir, name))
	if err != nil {
		r.t.Fatal(err)
	}
	img, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		r.t.Fatal(err)
	}
	if img.Width > w {
		r.t.Errorf("%s: %d px wide at a %d px window: the page overflows", name, img.Width, w)
	}
}

// readme writes the README's screenshot: the page at 1280 px, the window's
// first screen.
func (r *webRun) readme() {
	r.t.Helper()
	if _, err := chromedp.Run(r.bctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		r.t.Fatal(err)
	}
	b, err := chromedp.Run(r.bctx, chromedp.CaptureScreenshot())
	if err != nil {
		r.t.Fatal(err)
	}
	p := filepath.Join(e2e.Root(r.t), "docs", "images", "page.png")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.t.Logf("wrote %s", p)
}
