package web

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/claudopilot/claudopilot/internal/chromepath"
)

// TestMain stops the browser tests' shared Chromium after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	chromium.stop()
	os.Exit(code)
}

// chromium is one headless Chromium for the test binary's browser tests,
// started by the first of them: a start is ~2 s of CPU on a 2-core
// machine (its browser, GPU, zygote and renderer processes), about all a
// browser test costs, and a tab in a browser context of its own costs
// next to nothing (issue 23; BENCHMARKS.md, section 5, session 9).
var chromium sharedBrowser

type sharedBrowser struct {
	once   sync.Once
	root   context.Context // the browser's first tab: each test's tab is its child
	cancel []context.CancelFunc
	err    error
}

// browserPath is the Chromium to drive; without one (or with -short) the
// test is skipped.
func browserPath(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("drives a browser")
	}
	if p := chromepath.Find(); p != "" {
		return p
	}
	t.Skip("no chromium on this machine (.ci/run installs Debian's chromium)")
	return ""
}

// newTab is a tab of the shared Chromium (started on first use) in a
// browser context of its own, closed at the test's end. Its own context
// keeps each test's login cookie apart: every test's server is on
// 127.0.0.1, and a cookie ignores the port, so tabs sharing cookies
// would log each other out. The browser's window is 1280x900, its clock
// UTC and its language en-US (what the page tests read dates in).
func newTab(t *testing.T) context.Context {
	t.Helper()
	path := browserPath(t)
	chromium.once.Do(func() {
		actx, acancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1280, 900), chromedp.Env("TZ=UTC"), chromedp.Flag("lang", "en-US"))...)
		root, cancel := chromedp.NewContext(actx)
		chromium.root, chromium.cancel = root, []context.CancelFunc{cancel, acancel}
		chromium.err = chromedp.Do(root) // starts the browser
	})
	if chromium.err != nil {
		t.Fatalf("start chromium: %v", chromium.err)
	}
	tab, cancel := chromedp.NewContext(chromium.root, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	return tab
}

// shows waits until the CSS selector sel finds an element and each
// element it finds is visible (has a box), as chromedp.WaitVisible does,
// but on the page's events: one DevTools call whose answer the page gives
// when a DOM mutation makes it true. WaitVisible asks again every 5 ms,
// several DevTools calls each time, keeping the test process and Chromium
// busy for as long as a step waits. Its bound is the caller's context.
func shows(sel string) chromedp.Action[chromedp.Void] { return waitShown("css", sel) }

// showsX is shows for an XPath expression (what chromedp.Search matched).
func showsX(xpath string) chromedp.Action[chromedp.Void] { return waitShown("xpath", xpath) }

func waitShown(kind, sel string) chromedp.Action[chromedp.Void] {
	const shown = `(kind, sel) => {
		let found = [];
		if (kind === "css") {
			found = [...document.querySelectorAll(sel)];
		} else {
			const r = document.evaluate(sel, document, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
			for (let i = 0; i < r.snapshotLength; i++) found.push(r.snapshotItem(i));
		}
		return found.length > 0 && found.every((e) => e.offsetWidth || e.offsetHeight || e.getClientRects().length > 0);
	}`
	poll := chromedp.PollFunction[chromedp.Void](shown, chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(0), chromedp.WithPollingArgs(kind, sel))
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		if _, err := poll(ctx, tg); err != nil {
			return chromedp.Void{}, fmt.Errorf("wait for %s %s: %w", kind, sel, err)
		}
		return chromedp.Void{}, nil
	}
}

// stop ends the shared browser, if a test started it, and waits until
// it is gone (its temporary profile removed).
func (b *sharedBrowser) stop() {
	for _, c := range b.cancel {
		c()
	}
}
