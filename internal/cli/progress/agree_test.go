package progress

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/issues/queuelog"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/runview"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/web"
)

// TestViewsAgree feeds one event stream to the terminal's table, the web
// page's state and the queue's log lines and checks they say the same of
// every node: its state (a question waiting is "waiting on you"), the
// counts, and why a parked node is parked. Each renders runview's fold;
// a view that folded the events itself disagreed here: the terminal
// forgot the question at a warning about the phase, and the queue log
// said nothing of a question or a parked node.
func TestViewsAgree(t *testing.T) {
	t.Parallel()
	rm, err := roadmap.Parse("/r/roadmap", []byte(
		"1. [pending] **a** — x\n2. [pending] **b** — y\n3. [pending] **c** — z\n4. [pending] **d** — w\n"), nil, roadmap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	run := string(manifest.Running)
	evs := []scheduler.Event{
		{Time: at(0), Kind: scheduler.EvStart},
		{Time: at(1), Kind: scheduler.EvLaunch, Phase: "a", State: run, Role: "worker", Attempt: 1},
		{Time: at(1), Kind: scheduler.EvLaunch, Phase: "b", State: run, Role: "worker", Attempt: 1},
		{Time: at(1), Kind: scheduler.EvLaunch, Phase: "c", State: run, Role: "worker", Attempt: 1},
		{Time: at(2), Kind: scheduler.EvNode, Phase: "#7", Title: "fix the parser"},
		{Time: at(2), Kind: scheduler.EvNode, Phase: "#9", Title: "only offered"},
		{Time: at(3), Kind: scheduler.EvLaunch, Phase: "#7", State: run, Role: "worker", Attempt: 1},
		{Time: at(5), Kind: scheduler.EvExit, Phase: "a", Role: "worker", Attempt: 1},
		{Time: at(5), Kind: scheduler.EvMerging, Phase: "a"},
		{Time: at(6), Kind: scheduler.EvGate, Phase: "a", Detail: "merge"},
		{Time: at(7), Kind: scheduler.EvMerged, Phase: "a", State: "merged", Detail: "0123456789abcdef"},
		{Time: at(8), Kind: scheduler.EvExit, Phase: "b", Role: "worker", Attempt: 1, Reason: "gate", Detail: "go test failed", LogPath: "/r/b.log"},
		{Time: at(8), Kind: scheduler.EvBlocked, Phase: "b", State: "blocked", Reason: "gate", Detail: "go test failed", LogPath: "/r/b.log"},
		{Time: at(9), Kind: scheduler.EvExit, Phase: "c", Role: "worker", Attempt: 1},
		{Time: at(9), Kind: scheduler.EvAsk, Phase: "c", Role: "worker", Attempt: 1, Detail: "Postgres or SQLite?", Until: at(9 + 3600)},
		// A word about c while it waits: it still waits on you.
		{Time: at(10), Kind: scheduler.EvWarn, Phase: "c", Detail: "its branch is 3 commits behind"},
		{Time: at(11), Kind: scheduler.EvExit, Phase: "#7", Role: "worker", Attempt: 1, Reason: "exit", Detail: "exit status 1"},
		{Time: at(11), Kind: scheduler.EvFailed, Phase: "#7", State: "failed", Reason: "exit", Detail: "exit status 1"},
		{Time: at(12), Kind: scheduler.EvLaunch, Phase: "d", State: run, Role: "worker", Attempt: 1},
		{Time: at(13), Kind: scheduler.EvExit, Phase: "d", Role: "worker", Attempt: 1},
		{Time: at(13), Kind: scheduler.EvAsk, Phase: "d", Role: "worker", Attempt: 1, Detail: "Which port?", Until: at(13 + 3600)},
		{Time: at(14), Kind: scheduler.EvAnswer, Phase: "d", Role: "worker", Detail: "8080"},
		{Time: at(14), Kind: scheduler.EvLaunch, Phase: "d", State: run, Role: "worker", Attempt: 1},
	}
	now := at(20)

	// The terminal's table.
	var errb bytes.Buffer
	tv := New(&cmdutil.Streams{Out: &bytes.Buffer{}, Err: &errb}, false, rm, state.Layout{Top: "/r", RoadmapRel: "roadmap"})
	tv.logOf = func(string, state.Role, int) string { return "" }
	// The page.
	page := web.NewModel(rm, nil, state.Rules{}, false)
	// The queue's log.
	qf := runview.New()
	var qlog []string
	for _, e := range evs {
		tv.apply(e)
		page.Apply(e)
		qlog = append(qlog, queuelog.Lines(qf, e)...)
	}
	lines := tv.tableLines(200, now)

	type said struct{ state, why string }
	term := map[string]said{}
	row := regexp.MustCompile(`^  (\S+)\s+(waiting on you|running|blocked|failed|merged|pending|gate|merging|waiting|stopped|away)\b(.*)$`)
	for _, l := range lines[1:] {
		m := row.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("table line %q unread", l)
		}
		term[m[1]] = said{m[2], m[3]}
	}
	st := page.State()
	pg := map[string]said{}
	for _, p := range st.Phases {
		s := p.State
		if p.Question != "" && s == run {
			s = runview.WaitingOnYou
		}
		pg[p.ID] = said{s, p.Reason}
	}
	ql := map[string]said{}
	word := regexp.MustCompile(`^(\S+): (waiting on you|blocked|failed|away|merged|running)(?: at \S+|: ([^:]*)(?::.*)?|; .*)?$`)
	for _, l := range qlog {
		if m := word.FindStringSubmatch(l); m != nil {
			s := said{m[2], ""}
			if s.state == "blocked" || s.state == "failed" {
				s.why = m[3]
			}
			ql[m[1]] = s
		}
	}

	// Every node's state, and a parked node's reason.
	for _, id := range []string{"a", "b", "c", "d", "#7"} {
		want := pg[id]
		if got := term[id]; got.state != want.state {
			t.Errorf("%s: the terminal says %q, the page %q", id, got.state, want.state)
		}
		if want.why != "" && !strings.HasSuffix(term[id].why, "  "+want.why) {
			t.Errorf("%s: the terminal says why %q, the page %q", id, term[id].why, want.why)
		}
		if got := ql[id]; got.state != want.state || got.why != want.why {
			t.Errorf("%s: the queue log says %+v, the page %+v\n%s", id, got, want, strings.Join(qlog, "\n"))
		}
	}
	if _, ok := term["#9"]; ok {
		t.Error("the terminal lists #9, only offered")
	}
	// The counts: the page's, the terminal's header, the queue log's.
	for _, c := range []struct {
		name string
		page int
	}{{runview.WaitingOnYou, st.WaitingOnYou}, {"blocked", st.Counts["blocked"]}, {"failed", st.Counts["failed"]}, {"merged", st.Counts["merged"]}} {
		if c.page != 1 {
			t.Errorf("the page counts %d %s, want 1", c.page, c.name)
		}
		if !strings.Contains(lines[0], fmt.Sprintf("%d %s", c.page, c.name)) {
			t.Errorf("the terminal's header %q does not say %d %s", lines[0], c.page, c.name)
		}
		n := 0
		for _, s := range ql {
			if s.state == c.name {
				n++
			}
		}
		if n != c.page {
			t.Errorf("the queue log says %d %s, the page %d\n%s", n, c.name, c.page, strings.Join(qlog, "\n"))
		}
	}
}
