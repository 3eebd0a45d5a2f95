package web

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// The page's state carries the queue's feed from the one model: each
// scanner with its last run and what it filed, whether one runs now, and
// each promote step's newest outcome, a red one with why. A maintainer's
// "run now" and "switch off" are the page's authenticated POST actions,
// refused from another origin.
func TestFeedOnThePage(t *testing.T) {
	f := newFixture(t)
	at := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	f.srv.Model.SetFeed(func() Feed {
		return Feed{
			Scanners: []Scanner{
				{Name: "bugs", From: "built in", LastRun: at, Filed: 1, Dropped: 2, Issues: []Filed{{Number: 7, Title: "Parser drops a line"}}},
				{Name: "docs-drift", From: "claudopilot/scanners/docs-drift.md", Off: true, Running: true},
			},
			Promote: []PromoteStep{{From: "main", To: "staging", Kind: "red", At: at, PR: 4, Why: "checks red: ci"}},
		}
	})
	var st State
	resp := f.do(t, "GET", "/api/v1/state", "tok", "", "")
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if len(st.Scanners) != 2 || st.Scanners[0].Issues[0].Number != 7 || !st.Scanners[0].LastRun.Equal(at) || !st.Scanners[1].Off || !st.Scanners[1].Running {
		t.Errorf("scanners %+v", st.Scanners)
	}
	if len(st.Promote) != 1 || st.Promote[0].Kind != "red" || st.Promote[0].Why != "checks red: ci" {
		t.Errorf("promote %+v", st.Promote)
	}
	self := f.ts.URL
	for body, want := range map[string]int{
		`{"action":"scanner_run","id":"bugs"}`: 200,
		`{"action":"scanner_off","id":"bugs"}`: 200,
		`{"action":"scanner_on","id":"bugs"}`:  200,
		`{"action":"scanner_run"}`:             400,
		`{"action":"scanner_off","id":"nope"}`: 409,
		`{"action":"scanner_run","id":"nope"}`: 409,
	} {
		if got := f.do(t, "POST", "/api/v1/actions", "tok", self, body).StatusCode; got != want {
			t.Errorf("%s: %d, want %d", body, got, want)
		}
	}
	if got := f.do(t, "POST", "/api/v1/actions", "tok", "http://evil.example", `{"action":"scanner_run","id":"bugs"}`).StatusCode; got != 403 {
		t.Errorf("a cross-origin run now: %d, want 403", got)
	}
	if got := f.do(t, "POST", "/api/v1/actions", "", self, `{"action":"scanner_off","id":"bugs"}`).StatusCode; got != 401 {
		t.Errorf("a switch off without the token: %d, want 401", got)
	}
	if want := []string{"scanner run bugs", "scanner bugs on=false", "scanner bugs on=true"}; !slices.Equal(sortedCopy(f.acts.done), sortedCopy(want)) {
		t.Errorf("actions %v, want %v", f.acts.done, want)
	}
}

func sortedCopy(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
