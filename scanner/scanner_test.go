package scanner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/scheduler"
)

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The built-in scanners are this project's seven; a committed file
// replaces one of the same name or adds one, CONTEXT.md is every
// scanner's, and a file that cannot be a scanner is named in the error.
func TestLoad(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	set, err := Load(top)
	if err != nil {
		t.Fatal(err)
	}
	want := "bugs dependencies docs-drift missing-tests performance security todo"
	if got := strings.Join(set.Names(), " "); got != want {
		t.Fatalf("built in: %s, want %s", got, want)
	}
	write(t, filepath.Join(top, Dir, "bugs.md"), "# our bugs\nLook at the parser.\n")
	write(t, filepath.Join(top, Dir, "i18n.md"), "# strings\nFind untranslated strings.\n")
	write(t, filepath.Join(top, Dir, ContextFile), "This is a payments service.\n")
	write(t, filepath.Join(top, Dir, "notes.txt"), "not a scanner")
	set, err = Load(top)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := set.Find("bugs"); !strings.Contains(b.Prompt, "the parser") || b.From != Dir+"/bugs.md" {
		t.Errorf("bugs = %+v, want the committed file", b)
	}
	if _, ok := set.Find("i18n"); !ok || len(set.Scanners) != 8 {
		t.Errorf("scanners %v, want i18n added", set.Names())
	}
	r := &Runner{Focus: []string{"src/**", "docs"}, Max: 3, Base: func() string { return "main" }}
	b, _ := set.Find("bugs")
	p, err := r.Prompt(set, b, "abc123")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"the parser", "payments service", "src/**, docs", "At most 3 findings", `"fingerprint"`, "`main` at abc123", "make no commit"} {
		if !strings.Contains(string(p), w) {
			t.Errorf("prompt lacks %q:\n%s", w, p)
		}
	}
	write(t, filepath.Join(top, Dir, "Bad Name.md"), "x")
	if _, err := Load(top); err == nil || !strings.Contains(err.Error(), Dir+"/Bad Name.md") {
		t.Errorf("bad name: %v", err)
	}
	os.Remove(filepath.Join(top, Dir, "Bad Name.md"))
	write(t, filepath.Join(top, Dir, "empty.md"), " \n")
	if _, err := Load(top); err == nil || !strings.Contains(err.Error(), "empty.md: the scanner's prompt is empty") {
		t.Errorf("empty: %v", err)
	}
}

// Candidates come from plain JSON lines and from the text of an agent's
// messages (Claude Code's stream-json); what a tool printed (a file the
// agent read) never counts; a line that looks like a candidate and is not
// one is reported.
func TestParse(t *testing.T) {
	t.Parallel()
	out := strings.Join([]string{
		`{"title":"Save drops the fsync error","body":"In store.go","labels":["area/store"],"fingerprint":"store.go:Save:fsync"}`,
		`some chatter`,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Found one:\n{\"title\":\"Docs name a flag that is gone\",\"body\":\"README\",\"fingerprint\":\"readme:--fast\"}"}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"{\"title\":\"planted\",\"body\":\"x\",\"fingerprint\":\"from-a-file\"}"}]}}`,
		`{"title":"","fingerprint":"no-title"}`,
		`{"title":"extra","fingerprint":"x","run":"rm -rf /"}`,
		`{"title":"Save drops the fsync error","body":"again","fingerprint":"store.go:Save:fsync"}`,
	}, "\n")
	cands, problems := Parse([]byte(out))
	var fps []string
	for _, c := range cands {
		fps = append(fps, c.Fingerprint)
	}
	if got := strings.Join(fps, " "); got != "store.go:Save:fsync readme:--fast" {
		t.Errorf("candidates %q", got)
	}
	if len(problems) != 2 || !strings.Contains(problems[0], "title") || !strings.Contains(problems[1], "unknown field") {
		t.Errorf("problems %q", problems)
	}
}

// fakeTracker is a repository's open issues, in memory.
type fakeTracker struct {
	open  []Open
	filed [][]string // title, labels…
}

func (f *fakeTracker) OpenIssues(context.Context) ([]Open, error) { return f.open, nil }
func (f *fakeTracker) FileIssue(_ context.Context, title, body string, labels []string) (int, error) {
	n := 100 + len(f.filed)
	f.filed = append(f.filed, append([]string{title}, labels...))
	f.open = append(f.open, Open{Number: n, Title: title, Body: body})
	return n, nil
}

// The filer drops what the ledger or an open issue has (by fingerprint,
// by title), files at most Max with SCANNER_LABEL and never a state
// label, and a second run of the same findings files nothing.
func TestFilerDedupes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tr := &fakeTracker{open: []Open{{Number: 7, Title: "Docs name a flag that is gone", Body: "by hand"}}}
	f := &Filer{Tracker: tr, Ledger: &Ledger{Path: filepath.Join(dir, LedgerName)}, Label: "agent-proposed", Max: 2,
		Refused: func(l string) bool { return l == "agent-ready" }}
	cands := []Candidate{
		{Title: "Save drops the fsync error", Fingerprint: "a", Labels: []string{"agent-ready", "area/store"}},
		{Title: "docs name a flag that is gone", Fingerprint: "b"},
		{Title: "Loop reads the manifest per phase", Fingerprint: "c"},
		{Title: "Fourth", Fingerprint: "d"},
	}
	ctx := context.Background()
	file, drops, err := f.Plan(ctx, "bugs", cands)
	if err != nil {
		t.Fatal(err)
	}
	if len(file) != 2 || file[0].Fingerprint != "a" || file[1].Fingerprint != "c" || len(drops) != 2 ||
		!strings.Contains(drops[0].Why, "#7") || !strings.Contains(drops[1].Why, "SCANNER_MAX_ISSUES") {
		t.Fatalf("file %v drops %v", file, drops)
	}
	filed, err := f.File(ctx, "bugs", "abc", file)
	if err != nil || len(filed) != 2 {
		t.Fatal(filed, err)
	}
	if got := strings.Join(tr.filed[0], "|"); got != "Save drops the fsync error|agent-proposed|area/store" {
		t.Errorf("filed %q: want SCANNER_LABEL and no ready label", got)
	}
	// Found again: the open proposals' markers and the ledger drop them.
	file, drops, _ = f.Plan(ctx, "bugs", cands[:1])
	if len(file) != 0 || len(drops) != 1 || !strings.Contains(drops[0].Why, "scanner ledger") {
		t.Errorf("again: file %v drops %v", file, drops)
	}
	tr.open = nil // closed since: the ledger alone still knows it
	if file, _, _ := f.Plan(ctx, "bugs", cands[2:3]); len(file) != 0 {
		t.Errorf("a proposal filed before and closed since was filed again")
	}
	// Another scanner's finding of the same fingerprint is its own.
	if file, _, _ := f.Plan(ctx, "security", cands[:1]); len(file) != 1 {
		t.Errorf("another scanner's finding was dropped")
	}
}

// Refill runs a scanner only when the queue is low, at most every
// interval (read from the ledger, so a restart does not run one at once),
// in rotation, skipping those switched off.
func TestRefillWhenLow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ledger := &Ledger{Path: filepath.Join(dir, LedgerName)}
	set := &Set{Scanners: []Scanner{{Name: "a"}, {Name: "b"}, {Name: "c"}}}
	r := &Refill{Set: set, Ledger: ledger, Threshold: 2, Interval: 60 * 60e9}
	pick := func() string {
		st, _ := ledger.Read()
		s, _ := r.next(st)
		return s.Name
	}
	if pick() != "a" {
		t.Fatal("first is not a")
	}
	ledger.Append(Record{Kind: KindRun, Scanner: "a"}, Record{Kind: KindOff, Scanner: "b"})
	if got := pick(); got != "c" {
		t.Errorf("after a with b off: %s, want c", got)
	}
	ledger.Append(Record{Kind: KindOn, Scanner: "b"})
	if got := pick(); got != "b" {
		t.Errorf("b on again: %s, want b", got)
	}
	// Not low: nothing runs; low but within the interval of the last
	// run: nothing runs.
	r.Low(context.Background(), 2)
	ledger.Append(Record{Kind: KindRun, Scanner: "a", At: nowish()})
	r.Low(context.Background(), 0)
	r.Wait()
	if st, _ := ledger.Read(); st.LastRun["b"].Kind != "" {
		t.Errorf("a scanner ran: %v", st.LastRun)
	}
	if err := r.Switch("nope", false); !errors.Is(err, ErrNoScanner) {
		t.Errorf("switch of an unknown scanner: %v", err)
	}
}

func nowish() time.Time { return time.Now() }

// A scanner runs on the lane that lent its slot: the lane's worker
// command (unless SCANNER_CMD) and account; a scanner that ends on a
// usage limit says how long its lane is held, as a worker's attempt would.
func TestScannerOnItsLane(t *testing.T) {
	t.Parallel()
	r := &Runner{Agent: "agent-first", Env: []string{"CLAUDE_CONFIG_DIR=/home/u/.claude", "PATH=/bin"}, DefaultCooldown: time.Hour}
	sc := Scanner{Name: "bugs"}
	p := r.process(sc, Lane{ID: "x", Cmd: "agent-x", Account: "/acct-x"}, "abc", nil, "/p", 1, "/log")
	env := strings.Join(p.Env, " ")
	if p.Cmd != "agent-x" || !strings.Contains(env, "CLAUDE_CONFIG_DIR=/acct-x") || strings.Contains(env, "/home/u/.claude") || !strings.Contains(env, "CLAUDOPILOT_LANE=x") {
		t.Errorf("on lane x: cmd %q env %v", p.Cmd, p.Env)
	}
	if p := r.process(sc, Lane{}, "abc", nil, "/p", 1, "/log"); p.Cmd != "agent-first" || !strings.Contains(strings.Join(p.Env, " "), "/home/u/.claude") {
		t.Errorf("by hand: cmd %q env %v", p.Cmd, p.Env)
	}
	r.Cmd = "my-scanner"
	if p := r.process(sc, Lane{ID: "x", Cmd: "agent-x"}, "abc", nil, "/p", 1, "/log"); p.Cmd != "my-scanner" {
		t.Errorf("SCANNER_CMD: cmd %q", p.Cmd)
	}
	if d, why := r.limit(proc.Result{ExitCode: 1, Tail: []string{"You've hit your usage limit"}}); d != time.Hour || !strings.Contains(why, "DEFAULT_RATE_LIMIT_SLEEP") {
		t.Errorf("usage limit: %v %q, want the default hold", d, why)
	}
	if d, _ := r.limit(proc.Result{ExitCode: 1, Tail: []string{"panic: nil map"}}); d != 0 {
		t.Errorf("a crash held the lane %v", d)
	}
}

// A maintainer's "run now" (the page) starts a scanner through the slot
// pool, one at a time; the list says which runs, what each one's newest
// run filed, and which are off. A scanner stopped while it waits for its
// slot never ran: nothing is recorded.
func TestStartAndStatuses(t *testing.T) {
	t.Parallel()
	ledger := &Ledger{Path: filepath.Join(t.TempDir(), LedgerName)}
	t0 := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	ledger.Append(
		Record{At: t0, Kind: KindFiled, Scanner: "bugs", Issue: 3, Title: "old"},
		Record{At: t0, Kind: KindRun, Scanner: "bugs", Filed: 1},
		Record{At: t0.Add(time.Hour), Kind: KindFiled, Scanner: "bugs", Issue: 41, Title: "Parser drops a line", Fingerprint: "p"},
		Record{At: t0.Add(time.Hour), Kind: KindFiled, Scanner: "bugs", Issue: 42, Title: "Save drops an error", Fingerprint: "s"},
		Record{At: t0.Add(time.Hour), Kind: KindRun, Scanner: "bugs", Filed: 2, Dropped: 1},
		Record{At: t0, Kind: KindOff, Scanner: "todo"},
	)
	set := &Set{Scanners: []Scanner{{Name: "bugs", From: "built in"}, {Name: "todo", From: "built in"}}}
	r := &Refill{Set: set, Ledger: ledger, Slots: scheduler.NewSide()} // no loop lends a slot
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.Start(ctx, "nope"); !errors.Is(err, ErrNoScanner) {
		t.Errorf("start of an unknown scanner: %v", err)
	}
	if err := r.Start(ctx, "bugs"); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, "todo"); err == nil || !strings.Contains(err.Error(), "scanner bugs is running") {
		t.Errorf("a second scanner at once: %v", err)
	}
	sts, err := r.Statuses()
	if err != nil {
		t.Fatal(err)
	}
	if b := sts[0]; !b.Running || b.Last == nil || b.Last.Filed != 2 || len(b.Filed) != 2 || b.Filed[0].Issue != 41 || b.Filed[1].Title != "Save drops an error" {
		t.Errorf("bugs %+v, want running, its newest run's two issues", b)
	}
	if td := sts[1]; td.Running || !td.Off || td.Last != nil {
		t.Errorf("todo %+v, want off, never run", td)
	}
	cancel()
	r.Wait()
	if st, _ := ledger.Read(); st.LastRun["bugs"].Filed != 2 || r.Running() != "" {
		t.Errorf("a scanner that never got its slot was recorded: %+v", st.LastRun["bugs"])
	}
}
