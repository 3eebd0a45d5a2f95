package web

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The queue's feed in Chromium, from a server alone (no driver): the
// scanner list with its buttons, a red promote step in the header and in
// its table, each campaign's progress; "Run now" and "Switch off" reach
// the actions through the page's POST (same origin, the login cookie);
// at 1280 and 420 px wide nothing is wider than its box.
func TestFeedPageInChromium(t *testing.T) {
	browserPath(t)
	f := newFixture(t)
	f.acts.seen = make(chan string, 8)
	at := time.Now().Add(-time.Hour)
	f.srv.Model.SetFeed(func() Feed {
		return Feed{
			Scanners: []Scanner{
				{Name: "bugs", From: "built in", LastRun: at, Filed: 2, Dropped: 1, Issues: []Filed{{Number: 41, Title: "Parser drops a line"}, {Number: 42, Title: "A very long title for a proposal about a thing that the scanner found"}}},
				{Name: "dependencies-and-a-rather-long-scanner-name", From: "claudopilot/scanners/dependencies-and-a-rather-long-scanner-name.md", Off: true},
				{Name: "security", From: "built in", Running: true, LastRun: at, Error: "scanner security exited 2 (log .claudopilot/logs/scanner%3Asecurity/scanner-3.log)"},
			},
			Promote: []PromoteStep{
				{From: "main", To: "staging", Kind: "promoted", At: at, PR: 12},
				{From: "staging", To: "production", Kind: "red", At: at, PR: 13, Why: "checks red on the pull request: e2e-tests-against-the-production-like-environment"},
			},
		}
	})
	campaign(f.srv.Model, 100, "speed", 3, 1, 2)
	code, err := f.srv.LoginCode()
	if err != nil {
		t.Fatal(err)
	}
	bctx, bcancel := context.WithTimeout(newTab(t), 2*time.Minute) // an upper bound
	defer bcancel()
	click := func(sel, want string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			ok, err := chromedp.Evaluate[bool](fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true; })()`, sel))(ctx, tg)
			if err == nil && !ok {
				err = fmt.Errorf("%s: not on the page", sel)
			}
			if err != nil {
				return chromedp.Void{}, err
			}
			select {
			case got := <-f.acts.seen:
				if got != want {
					return chromedp.Void{}, fmt.Errorf("action %q, want %q", got, want)
				}
			case <-ctx.Done():
				return chromedp.Void{}, fmt.Errorf("no action after clicking %s", sel)
			}
			return chromedp.Void{}, nil
		}
	}
	steps := []struct {
		what string
		act  chromedp.Action[chromedp.Void]
	}{
		{"open the login URL", chromedp.Navigate(f.ts.URL + "/login?code=" + code)},
		{"1280 wide", chromedp.EmulateViewport(1280, 900)},
		{"the scanners are listed", shows(`#scanners tr[data-scanner="bugs"]`)},
		{"with what bugs filed", showsX(`//tr[@data-scanner="bugs"][contains(., "#41")][contains(., "#42")]`)},
		{"a failed run says so", showsX(`//tr[@data-scanner="security"][contains(., "failed")][contains(., "running")]`)},
		{"the red step in the header", showsX(`//div[@id="holds"]/div[contains(., "Promote staging→production is red")][contains(., "e2e-tests")]`)},
		{"and in the promote table", shows(`#promote tr[data-step="staging→production"] td.red`)},
		{"the campaign's progress", showsX(`//tr[@data-campaign="speed"][td[2]="3"][td[3]="1"][td[4]="2"]`)},
		{"run bugs now", click(`#scanners button[data-run="bugs"]`, "scanner run bugs")},
		{"switch bugs off", click(`#scanners button[data-switch="bugs"]`, "scanner bugs on=false")},
		{"fits at 1280", fitsAt(1280)},
		{"fits at 420", fitsAt(420)},
	}
	for _, s := range steps {
		if _, err := chromedp.Run(bctx, s.act); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
	}
	if p := os.Getenv("CLAUDOPILOT_SCREENSHOT"); p != "" {
		// To look at it: CLAUDOPILOT_SCREENSHOT=/tmp/feed.png go test -run TestFeedPageInChromium ./web
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err == nil {
			err = os.WriteFile(p, png, 0o644)
		}
		if err != nil {
			t.Error(err)
		}
	}
}
