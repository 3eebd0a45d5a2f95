package issues

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/scanner"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/secret"
	"github.com/claudopilot/claudopilot/state"
)

// scanTracker files the scanners' proposals through the queue's GitHub,
// as engine composes it.
type scanTracker struct{ t *Tracker }

func (s scanTracker) OpenIssues(ctx context.Context) ([]scanner.Open, error) {
	is, err := s.t.OpenIssues(ctx)
	var out []scanner.Open
	for _, i := range is {
		out = append(out, scanner.Open{Number: i.Number, Title: i.Title, Body: i.Body})
	}
	return out, err
}

func (s scanTracker) FileIssue(ctx context.Context, title, body string, labels []string) (int, error) {
	return s.t.FileIssue(ctx, title, body, labels)
}

// lineWatch passes writes on and closes a channel the first time a line
// holding its text is written.
type lineWatch struct {
	w    io.Writer
	mu   sync.Mutex
	want map[string]chan struct{}
}

func (l *lineWatch) Write(p []byte) (int, error) {
	l.mu.Lock()
	for s, ch := range l.want {
		if strings.Contains(string(p), s) {
			close(ch)
			delete(l.want, s)
		}
	}
	l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lineWatch) on(s string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := make(chan struct{})
	l.want[s] = ch
	return ch
}

func waitFor(t *testing.T, ch <-chan struct{}, what string, log fmt.Stringer) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(2 * time.Minute): // a bound for a hung run, not a wait
		t.Fatalf("never: %s\nlog:\n%s", what, log)
	}
}

// scanAgent is SCANNER_CMD: three findings, one of which an open issue
// already has (by title), one said twice.
const scanAgent = `cat > /dev/null
test "$CLAUDOPILOT_ROLE" = scanner
test -z "$GITHUB_TOKEN"
echo '{"title":"Add work/issue file","body":"Write work/issue-N.txt.","labels":["agent-ready","area/work"],"fingerprint":"work:missing"}'
echo '{"title":"Docs name a flag that is gone","body":"README","fingerprint":"readme:--fast"}'
echo '{"title":"Add work/issue file","body":"again","fingerprint":"work:missing"}'
echo '{"title":"Second proposal","body":"Later.","fingerprint":"second"}'
`

// Refill end to end against the fake GitHub: a polling queue that runs
// low runs a scanner, which files its findings deduplicated (an open
// issue's title, a repeated fingerprint) with SCANNER_LABEL and never the
// ready label; the driver's own ready label on its proposal does not make
// it work; a maintainer's does, and the proposal becomes merged code. A
// second run of the scanner files nothing (the scanner ledger).
func TestRefillProposalToMergedCode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fake.NewIssue("alice", "Docs name a flag that is gone", "by hand", nil, "")
	log := &syncBuf{}
	watch := &lineWatch{w: log, want: map[string]chan struct{}{}}
	filed := watch.on("refill: scanner bugs filed 2 proposal(s), dropped 1")
	var refill *scanner.Refill
	q := e.queue("c1", log, func(c *Config) {
		c.Once, c.Log, c.ScannerLabel = false, watch, "agent-proposed"
		c.Refill = func(ctx context.Context, n int) { refill.Low(ctx, n) }
	})
	set, err := scanner.Load(q.git.Dir)
	if err != nil {
		t.Fatal(err)
	}
	ledger := &scanner.Ledger{Path: scanner.LedgerPath(q.layout().StateDir())}
	refill = &scanner.Refill{Set: set, Ledger: ledger, Threshold: 2, Interval: time.Hour,
		Log: func(f string, a ...any) { fmt.Fprintf(watch, f+"\n", a...) },
		Runner: &scanner.Runner{Git: q.git, Layout: state.Layout{Top: q.git.Dir}, Cmd: e.script("scan.sh", scanAgent), Env: q.AgentEnvironment(),
			Head: q.BaseTip, Base: q.Base, Max: 5, KillGrace: time.Second},
		Filer: &scanner.Filer{Tracker: scanTracker{q.Tracker()}, Ledger: ledger, Label: "agent-proposed", Max: 5,
			Redact: secret.NewRedactor(nil, token), Refused: func(l string) bool { return strings.EqualFold(l, "agent-ready") }},
	}
	// The scanner takes its slot from the loop's pool, as engine
	// composes it.
	refill.Slots = scheduler.NewSide()
	merged := make(chan struct{})
	var once sync.Once
	e.fake.OnMerge(func(int) { once.Do(func() { close(merged) }) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { _, err := runQueue(ctx, q, harness{side: refill.Slots}); ran <- err }()

	waitFor(t, filed, "the scanner filed its proposals", log)
	var props []int
	for n := 2; n <= 3; n++ {
		is := e.issue(n)
		if !hasLabel(is, "agent-proposed") || hasLabel(is, "agent-ready") || is.Author != "bot" || !strings.Contains(is.Body, "`bugs` scanner") {
			t.Fatalf("#%d = %+v: want a proposal by the driver's account, without the ready label", n, is)
		}
		props = append(props, n)
	}
	if _, ok := e.fake.Issue(4); ok {
		t.Fatalf("a fourth issue was filed:\n%s", dump(e, 4))
	}
	// The driver's own account labels its proposal: not a maintainer's look.
	skipped := watch.on(fmt.Sprintf("#%d: skipped, not trusted: agent-ready was applied by bot, the driver's own account", props[0]))
	e.fake.LabelIssue(props[0], "agent-ready", "bot")
	waitFor(t, skipped, "the driver's own label was refused", log)
	// A maintainer's label (taken off and put on again, as the label is
	// there already): worked and merged.
	e.clock.Advance(time.Second)
	e.fake.UnlabelIssue(props[0], "agent-ready", "alice")
	e.fake.LabelIssue(props[0], "agent-ready", "alice")
	waitFor(t, merged, "the approved proposal was merged", log)
	cancel()
	if err := <-ran; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v", err)
	}
	if !e.onMain(fmt.Sprintf("work/issue-%d.txt", props[0])) {
		t.Errorf("the proposal's work is not on main:\n%s", log)
	}
	if hasLabel(e.issue(props[1]), "agent-running") {
		t.Errorf("the unapproved proposal was claimed")
	}
	// Found again: nothing filed (by hand, after the run: no pool).
	refill.Slots = nil
	rep, err := refill.Run(context.Background(), "bugs", false)
	if err != nil || len(rep.Filed) != 0 || len(rep.Dropped) != 3 {
		t.Errorf("second run: %+v, %v: want nothing filed, 3 dropped", rep, err)
	}
}

// Refill files nothing while the queue is not low: issues ready (waiting
// on a dependency) and proposals count, claimed ones do not.
func TestRefillNoneWhenNotLow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dep := e.fake.NewIssue("alice", "Later", "not queued", nil, "")
	e.fake.NewIssue("alice", "Waits", fmt.Sprintf("Depends on #%d", dep), []string{"agent-ready"}, "alice")
	e.fake.NewIssue("bot", "A proposal", "x", []string{"agent-proposed"}, "bot")
	e.fake.NewIssue("alice", "Claimed elsewhere", "x", []string{"agent-running"}, "alice")
	log := &syncBuf{}
	var refill *scanner.Refill
	var mu sync.Mutex
	var counts []int
	polled := make(chan struct{})
	q := e.queue("c1", log, func(c *Config) {
		c.Once, c.ScannerLabel = false, "agent-proposed"
		c.Refill = func(ctx context.Context, n int) {
			refill.Low(ctx, n)
			mu.Lock()
			if counts = append(counts, n); len(counts) == 3 {
				close(polled)
			}
			mu.Unlock()
		}
	})
	set, err := scanner.Load(q.git.Dir)
	if err != nil {
		t.Fatal(err)
	}
	ledger := &scanner.Ledger{Path: scanner.LedgerPath(q.layout().StateDir())}
	refill = &scanner.Refill{Set: set, Ledger: ledger, Threshold: 2, Interval: time.Hour,
		Runner: &scanner.Runner{Git: q.git, Layout: state.Layout{Top: q.git.Dir}, Cmd: e.script("scan.sh", scanAgent), Env: q.AgentEnvironment(),
			Head: q.BaseTip, Base: q.Base, Max: 5, KillGrace: time.Second},
		Filer: &scanner.Filer{Tracker: scanTracker{q.Tracker()}, Ledger: ledger, Label: "agent-proposed", Max: 5}}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { _, err := runQueue(ctx, q, harness{}); ran <- err }()
	waitFor(t, polled, "three polls", log)
	cancel()
	<-ran
	refill.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, n := range counts {
		if n != 2 {
			t.Errorf("counted %v, want 2 at each poll (the ready issue and the proposal)", counts)
			break
		}
	}
	if st, _ := ledger.Read(); len(st.LastRun) != 0 {
		t.Errorf("a scanner ran: %+v\n%s", st.LastRun, log)
	}
	if _, ok := e.fake.Issue(5); ok {
		t.Errorf("an issue was filed")
	}
}
