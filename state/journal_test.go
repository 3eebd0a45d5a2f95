package state

import (
	"encoding/base64"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/ledger"
	"github.com/claudopilot/claudopilot/secret"
)

func openJournal(t *testing.T) *Journal {
	t.Helper()
	jn, err := OpenJournal(filepath.Join(t.TempDir(), "state", "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jn.Close() })
	return jn
}

func appendAll(t *testing.T, jn *Journal, recs ...Record) {
	t.Helper()
	for _, r := range recs {
		if err := jn.Append(r); err != nil {
			t.Fatal(err)
		}
	}
}

func TestJournalRoundTrip(t *testing.T) {
	t.Parallel()
	jn := openJournal(t)
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	in := []Record{
		{Time: t0, Phase: "a", Event: "launch", Role: Worker, Attempt: 1},
		{Time: t0.Add(time.Second), Phase: "a", Event: "pgid", Role: Worker, Attempt: 1, PGID: 4242},
		{Time: t0.Add(2 * time.Second), Phase: "a", Event: "cooldown", Role: Worker, Attempt: 1, Until: t0.Add(time.Hour)},
		{Time: t0.Add(3 * time.Second), Phase: "a", Event: "fail", Role: Supervisor, Attempt: 2, Reason: ReasonConflict, Detail: "x.go"},
		{Time: t0.Add(4 * time.Second), Phase: "a", Event: "merged", Commit: "abc"},
	}
	appendAll(t, jn, in...)
	if err := jn.Append(Record{Phase: "b", Event: "launch"}); err != nil {
		t.Fatal(err)
	}
	out, err := ReadJournal(jn.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in)+1 {
		t.Fatalf("read %d records, want %d", len(out), len(in)+1)
	}
	for i := range in {
		if !reflect.DeepEqual(out[i], in[i]) {
			t.Errorf("record %d = %+v, want %+v", i, out[i], in[i])
		}
	}
	if out[len(in)].Time.IsZero() {
		t.Errorf("Append did not stamp a zero time")
	}
}

func TestReadJournalMissingAndTorn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	recs, err := ReadJournal(filepath.Join(dir, "nope.jsonl"))
	if err != nil || recs != nil {
		t.Errorf("missing journal: %v, %v", recs, err)
	}
	path := filepath.Join(dir, "j.jsonl")
	data := `{"t":"2025-01-01T00:00:00Z","phase":"a","ev":"launch","role":"worker","attempt":1}
{"t":"2025-01-01T00:00:01Z","phase":"a","ev":"do`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	recs, err = ReadJournal(path)
	if err != nil || len(recs) != 1 || recs[0].Event != "launch" {
		t.Errorf("torn journal: %+v, %v", recs, err)
	}
}

func TestHistory(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	rec := func(s int, phase, ev string, role Role, attempt int) Record {
		return Record{Time: at(s), Phase: phase, Event: ev, Role: role, Attempt: attempt}
	}
	with := func(r Record, f func(*Record)) Record { f(&r); return r }

	cases := []struct {
		name string
		recs []Record
		want map[string]*PhaseHistory
		cool map[Role]time.Time
	}{
		{
			name: "empty",
			want: map[string]*PhaseHistory{},
			cool: map[Role]time.Time{},
		},
		{
			name: "records without a phase are ignored",
			recs: []Record{{Time: at(0), Event: "start", PID: 7}},
			want: map[string]*PhaseHistory{},
			cool: map[Role]time.Time{},
		},
		{
			name: "worker fails, supervisor fails",
			recs: []Record{
				rec(0, "a", "launch", Worker, 1),
				with(rec(1, "a", "pgid", Worker, 1), func(r *Record) { r.PGID = 11 }),
				with(rec(10, "a", "fail", Worker, 1), func(r *Record) { r.Reason, r.Detail = ReasonGate, "red" }),
				rec(11, "a", "launch", Supervisor, 1),
				with(rec(12, "a", "pgid", Supervisor, 1), func(r *Record) { r.PGID = 12 }),
				with(rec(20, "a", "fail", Supervisor, 1), func(r *Record) { r.Reason, r.Detail = ReasonExit, "boom" }),
			},
			want: map[string]*PhaseHistory{"a": {
				WorkerRuns: 1, SuperRuns: 1, SuperSpent: 1, Reason: ReasonExit, Detail: "boom",
				Last: "fail", LastFailBy: Supervisor, Spent: 19 * time.Second,
			}},
			cool: map[Role]time.Time{},
		},
		{
			name: "running: process groups kept",
			recs: []Record{
				rec(0, "a", "launch", Worker, 1),
				with(rec(1, "a", "pgid", Worker, 1), func(r *Record) { r.PGID = 7 }),
				with(rec(2, "a", "pgid", Worker, 1), func(r *Record) { r.PGID = 8 }),
			},
			// Each process started is a session (PHASE_MAX_SESSIONS),
			// though no outcome booked it yet.
			want: map[string]*PhaseHistory{"a": {WorkerRuns: 1, Last: "launch", PGIDs: []int{7, 8}, launchedAt: at(0), onLane: true,
				Usage: ledger.Usage{Sessions: 2}, ByRole: map[Role]ledger.Usage{Worker: {Sessions: 2}}}},
			cool: map[Role]time.Time{},
		},
		{
			name: "cooldown reuses the attempt number",
			recs: []Record{
				rec(0, "a", "launch", Worker, 1),
				with(rec(5, "a", "cooldown", Worker, 1), func(r *Record) { r.Until = at(100) }),
				rec(100, "a", "launch", Worker, 1),
				with(rec(110, "a", "done", Worker, 1), func(r *Record) { r.Tip = "abc" }),
			},
			want: map[string]*PhaseHistory{"a": {WorkerRuns: 1, Last: "done", Tip: "abc", Spent: 15 * time.Second}},
			cool: map[Role]time.Time{Worker: at(100)},
		},
		{
			name: "cooldown not yet relaunched leaves the count one lower",
			recs: []Record{
				rec(0, "a", "launch", Worker, 1),
				with(rec(5, "a", "cooldown", Worker, 1), func(r *Record) { r.Until = at(100) }),
			},
			want: map[string]*PhaseHistory{"a": {WorkerRuns: 0, Last: "cooldown", Spent: 5 * time.Second}},
			cool: map[Role]time.Time{Worker: at(100)},
		},
		{
			name: "newest cooldown deadline per role",
			recs: []Record{
				rec(0, "a", "launch", Worker, 1),
				with(rec(1, "a", "cooldown", Worker, 1), func(r *Record) { r.Until = at(100) }),
				rec(0, "b", "launch", Worker, 1),
				with(rec(1, "b", "cooldown", Worker, 1), func(r *Record) { r.Until = at(50) }),
				rec(2, "c", "launch", Supervisor, 1),
				with(rec(3, "c", "cooldown", Supervisor, 1), func(r *Record) { r.Until = at(70) }),
			},
			want: map[string]*PhaseHistory{
				"a": {Last: "cooldown", Spent: time.Second},
				"b": {Last: "cooldown", Spent: time.Second},
				"c": {Last: "cooldown", Spent: time.Second},
			},
			cool: map[Role]time.Time{Worker: at(100), Supervisor: at(70)},
		},
		{
			name: "supervisor transient reuses its attempt; a repair the driver died during is not spent",
			recs: []Record{
				rec(0, "a", "launch", Worker, 1),
				with(rec(1, "a", "fail", Worker, 1), func(r *Record) { r.Reason = ReasonGate }),
				rec(2, "a", "launch", Supervisor, 1),
				rec(3, "a", "transient", Supervisor, 1),
				rec(4, "a", "launch", Supervisor, 1),
			},
			want: map[string]*PhaseHistory{"a": {
				WorkerRuns: 1, SuperRuns: 1, SuperSpent: 0, Reason: ReasonGate, Last: "launch", LastFailBy: Worker,
				Spent: 2 * time.Second, launchedAt: at(4), onLane: true,
			}},
			cool: map[Role]time.Time{},
		},
		{
			name: "a poked worker reuses its attempt (STUCK_POKES)",
			recs: []Record{
				rec(0, "a", "launch", Worker, 1),
				rec(1, "a", "poke", Worker, 1),
				rec(2, "a", "launch", Worker, 1),
			},
			want: map[string]*PhaseHistory{"a": {
				WorkerRuns: 1, Last: "launch", Spent: time.Second, launchedAt: at(2), onLane: true,
			}},
			cool: map[Role]time.Time{},
		},
		{
			name: "repairs the driver's death or an interrupt cut short spend nothing, once relaunched too",
			recs: []Record{
				rec(0, "a", "launch", Worker, 1),
				with(rec(1, "a", "fail", Worker, 1), func(r *Record) { r.Reason = ReasonGate }),
				rec(2, "a", "launch", Supervisor, 1), // SIGKILL: no outcome
				rec(3, "a", "launch", Worker, 2),
				with(rec(4, "a", "fail", Worker, 2), func(r *Record) { r.Reason = ReasonGate }),
				rec(5, "a", "launch", Supervisor, 2),
				rec(6, "a", "interrupted", Supervisor, 2), // Ctrl-C
				rec(7, "a", "launch", Supervisor, 3),      // SIGKILL again
				rec(8, "a", "launch", Supervisor, 4),
				with(rec(9, "a", "fail", Supervisor, 4), func(r *Record) { r.Reason = ReasonExit }),
			},
			want: map[string]*PhaseHistory{"a": {
				WorkerRuns: 2, SuperRuns: 4, SuperSpent: 1, Reason: ReasonExit, Last: "fail", LastFailBy: Supervisor,
				Spent: 4 * time.Second,
			}},
			cool: map[Role]time.Time{},
		},
		{
			name: "interrupted attempt still counts",
			recs: []Record{
				rec(0, "a", "launch", Worker, 1),
				with(rec(1, "a", "pgid", Worker, 1), func(r *Record) { r.PGID = 9 }),
				rec(3, "a", "interrupted", Worker, 1),
			},
			want: map[string]*PhaseHistory{"a": {WorkerRuns: 1, Last: "interrupted", Spent: 3 * time.Second}},
			cool: map[Role]time.Time{},
		},
		{
			name: "failed and blocked",
			recs: []Record{
				rec(0, "a", "launch", Worker, 1),
				with(rec(1, "a", "fail", Worker, 1), func(r *Record) { r.Reason, r.Detail = ReasonStuck, "quiet" }),
				with(rec(2, "a", "blocked", "", 0), func(r *Record) { r.Reason = ReasonStuck }),
				with(rec(2, "b", "blocked", "", 0), func(r *Record) { r.WaitsOn = "a" }),
				with(rec(3, "c", "failed", "", 0), func(r *Record) { r.Reason = ReasonNoDone }),
			},
			want: map[string]*PhaseHistory{
				"a": {WorkerRuns: 1, Reason: ReasonStuck, Detail: "quiet", Last: "blocked", LastFailBy: Worker, Spent: time.Second},
				"b": {Last: "blocked", WaitsOn: "a"},
				"c": {Last: "failed", Reason: ReasonNoDone},
			},
			cool: map[Role]time.Time{},
		},
		{
			name: "merged and retry start over",
			recs: []Record{
				rec(0, "a", "launch", Worker, 1),
				with(rec(1, "a", "fail", Worker, 1), func(r *Record) { r.Reason = ReasonGate }),
				rec(2, "a", "launch", Supervisor, 1),
				rec(3, "a", "done", Supervisor, 1),
				with(rec(4, "a", "merged", "", 0), func(r *Record) { r.Commit = "c1" }),
				rec(0, "b", "launch", Worker, 1),
				with(rec(1, "b", "fail", Worker, 1), func(r *Record) { r.Reason = ReasonGate }),
				with(rec(2, "b", "failed", "", 0), func(r *Record) { r.Reason = ReasonGate }),
				rec(3, "b", "retry", "", 0),
			},
			want: map[string]*PhaseHistory{
				"a": {WorkerRuns: 1, SuperRuns: 1, SuperSpent: 1, LastFailBy: Worker, Last: "merged", Spent: 2 * time.Second},
				"b": {Last: "retry"},
			},
			cool: map[Role]time.Time{},
		},
		{
			name: "counters after a retry",
			recs: []Record{
				rec(0, "a", "launch", Worker, 3),
				rec(1, "a", "retry", "", 0),
				rec(2, "a", "launch", Worker, 1),
			},
			want: map[string]*PhaseHistory{"a": {WorkerRuns: 1, Last: "launch", launchedAt: at(2), onLane: true}},
			cool: map[Role]time.Time{},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, cool := History(c.recs)
			for _, h := range got {
				h.lastLane, h.ranInRun = "", false // TestLastLaneOutlivesARetry's
			}
			if !reflect.DeepEqual(got, c.want) {
				for id, h := range got {
					t.Errorf("got %s: %+v", id, *h)
				}
				for id, h := range c.want {
					t.Errorf("want %s: %+v", id, *h)
				}
			}
			byRole := map[Role]time.Time{}
			for k, until := range cool {
				if until.After(byRole[k.Role]) {
					byRole[k.Role] = until
				}
			}
			if !reflect.DeepEqual(byRole, c.cool) {
				t.Errorf("cooldowns %v, want %v", cool, c.cool)
			}
		})
	}
}

// Records written with Write are read back at once, before any fsync (a
// killed driver loses none of them), and share the next Sync's fsync.
func TestJournalWriteSharesOneSync(t *testing.T) {
	t.Parallel()
	jn := openJournal(t)
	for _, ev := range []string{"launch", "done", "merged"} {
		if err := jn.Write(Record{Phase: "a", Event: ev}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := ReadJournal(jn.Path())
	if err != nil || len(recs) != 3 {
		t.Fatalf("read before any sync: %d records, %v; want 3", len(recs), err)
	}
	if n := jn.Syncs(); n != 0 {
		t.Fatalf("Write fsynced: %d", n)
	}
	for range 2 {
		if err := jn.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if n := jn.Syncs(); n != 1 {
		t.Errorf("three writes and two Syncs made %d fsyncs, want 1 (the second had nothing new)", n)
	}
	appendAll(t, jn, Record{Phase: "a", Event: "pgid", PGID: 7})
	if n := jn.Syncs(); n != 2 {
		t.Errorf("Append made %d fsyncs in all, want 2", n)
	}
}

// The journal's texts go through the redaction funnel (#22 §2): a
// failure's detail holding a secret, raw, URL-escaped or base64-encoded,
// is written redacted.
func TestJournalRedacts(t *testing.T) {
	pw := "p@ss/w0rd+Zq8 x=1&y"
	forms := []string{pw, url.QueryEscape(pw), base64.StdEncoding.EncodeToString([]byte(pw))}
	j, err := OpenJournal(filepath.Join(t.TempDir(), "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	j.SetRedact(secret.NewRedactor([]string{"DEPLOY_PASSWORD=" + pw}).String)
	for _, f := range forms {
		if err := j.Append(Record{Phase: "p", Event: "fail", Detail: "the gate said " + f, Cmd: "agent --password " + f}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(j.Path())
	if err != nil {
		t.Fatal(err)
	}
	recs, err := ReadJournal(j.Path())
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	for _, f := range forms {
		if strings.Contains(string(b), f) {
			t.Errorf("the journal holds %q:\n%s", f, b)
		}
	}
	for _, r := range recs {
		if r.Detail != "the gate said [REDACTED]" || r.Cmd != "agent --password [REDACTED]" {
			t.Errorf("record %+v", r)
		}
	}
}

// A driver killed in the middle of a record (a write of more than a page
// is cut short by SIGKILL; a power cut loses a tail) leaves a torn last
// line. The restarted driver's first record starts a line of its own and
// is read back: before, it was glued to the torn line and lost with it.
func TestJournalReopenedAfterATornLine(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "journal.jsonl")
	torn := `{"phase":"a","ev":"launch"}` + "\n" + `{"phase":"a","ev":"done","detail":"a long`
	if err := os.WriteFile(p, []byte(torn), 0o644); err != nil {
		t.Fatal(err)
	}
	jn, err := OpenJournal(p)
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	jn.SetWarn(func(s string) { warned = append(warned, s) })
	appendAll(t, jn, Record{Event: "run"}, Record{Phase: "a", Event: "launch"})
	jn.Close()
	recs, err := ReadJournal(p)
	if err != nil {
		t.Fatal(err)
	}
	var evs []string
	for _, r := range recs {
		evs = append(evs, strings.TrimSpace(r.Phase+" "+r.Event))
	}
	if want := []string{"a launch", "run", "a launch"}; !reflect.DeepEqual(evs, want) {
		t.Errorf("records %q, want %q", evs, want)
	}
	if len(warned) > 0 {
		t.Errorf("a torn line of its own driver's warned: %q", warned)
	}
}

// TestJournalAfterAnotherWriter: an agent without the sandbox can write
// the journal before it asks its question. Whatever it wrote, the
// driver's next record (the question) is read back, after the forged
// ones, and the driver is warned; a link in the journal's place fails.
// Before: the torn line swallowed the question, and after a rename the
// question went to a file no one reads, so a restarted driver took the
// forged answer.
func TestJournalAfterAnotherWriter(t *testing.T) {
	t.Parallel()
	forged := `{"phase":"a","ev":"ask","detail":"forged"}` + "\n" + `{"phase":"a","ev":"answer","detail":"FORGED"}` + "\n" + `{"phase":"a","ev":"tor`
	ask := Record{Phase: "a", Event: "ask", Detail: "which port?"}
	for _, how := range []string{"appended", "renamed over", "link"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			jn := openJournal(t)
			var warned []string
			jn.SetWarn(func(s string) { warned = append(warned, s) })
			appendAll(t, jn, Record{Phase: "a", Event: "launch"})
			p := jn.Path()
			old, _ := os.ReadFile(p)
			var err error
			switch how {
			case "appended":
				var f *os.File
				if f, err = os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0); err == nil {
					_, err = f.WriteString(forged)
					f.Close()
				}
			case "renamed over":
				if err = os.WriteFile(p+".new", append(old, forged...), 0o644); err == nil {
					err = os.Rename(p+".new", p)
				}
			case "link":
				target := filepath.Join(t.TempDir(), "bashrc")
				if err = os.WriteFile(target, append(old, forged...), 0o644); err == nil {
					if err = os.Remove(p); err == nil {
						err = os.Symlink(target, p)
					}
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			err = jn.Append(ask)
			if how == "link" {
				if err == nil || !strings.Contains(err.Error(), "replaced by another process") {
					t.Fatalf("a link in the journal's place: %v, want an error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			appendAll(t, jn, Record{Phase: "b", Event: "launch"})
			recs, err := ReadJournal(p)
			if err != nil {
				t.Fatal(err)
			}
			var evs []string
			for _, r := range recs {
				evs = append(evs, r.Phase+" "+r.Event+" "+r.Detail)
			}
			want := []string{"a launch ", "a ask forged", "a answer FORGED", "a ask which port?", "b launch "}
			if !reflect.DeepEqual(evs, want) {
				t.Errorf("records %q, want %q", evs, want)
			}
			if h, _ := History(recs); h["a"].Last != "ask" || h["a"].Question != "which port?" {
				t.Errorf("a restarted driver reads last %q, question %q: want the open question", h["a"].Last, h["a"].Question)
			}
			if len(warned) != 1 || !strings.Contains(warned[0], "written by another process") {
				t.Errorf("warned %q, want one warning", warned)
			}
		})
	}
}

// A phase parked with its question unanswered keeps the question as its
// detail, so explain says what was left unanswered.
func TestParkedQuestionIsTheDetail(t *testing.T) {
	t.Parallel()
	hist, _ := History([]Record{
		{Phase: "a", Event: "launch", Role: Worker, Attempt: 1},
		{Phase: "a", Event: "ask", Role: Worker, Attempt: 1, Detail: "Which port?"},
		{Phase: "a", Event: "blocked", Reason: ReasonNeedsInput},
	})
	if h := hist["a"]; h.Last != "blocked" || h.Reason != ReasonNeedsInput || h.Detail != "no answer to: Which port?" {
		t.Errorf("history %+v, want blocked, needs-input, the question as detail", h)
	}
}

// BenchmarkJournalWrite: one record written (no fsync), as the loop
// writes most of them; own's checks (one fstat, one lstat) included.
func BenchmarkJournalWrite(b *testing.B) {
	jn, err := OpenJournal(filepath.Join(b.TempDir(), "journal.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer jn.Close()
	r := Record{Phase: "a", Event: "launch", Role: Worker, Attempt: 1, Time: time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)}
	for b.Loop() {
		if err := jn.Write(r); err != nil {
			b.Fatal(err)
		}
	}
}

// The lane of a phase's newest attempt in the newest run outlives the
// attempt and a retry, as the loop's memory of it does (explain's home
// lane for a retried phase); a new run forgets it, as a new loop does.
func TestLastLaneOutlivesARetry(t *testing.T) {
	t.Parallel()
	run := Record{Event: "run", Rules: &Rules{}}
	recs := []Record{
		run,
		{Phase: "b", Event: "launch", Role: Worker, Attempt: 1, Lane: "codex"},
		{Phase: "b", Event: "fail", Role: Worker, Attempt: 1, Reason: ReasonGate},
		{Phase: "b", Event: "blocked", Reason: ReasonGate},
		{Phase: "b", Event: "retry"},
	}
	hist, _ := History(recs)
	if lane, ok := hist["b"].LastLane(); lane != "codex" || !ok {
		t.Errorf("after a retry: LastLane %q, %v; want codex", lane, ok)
	}
	if _, ok := hist["b"].RunningOn(); ok {
		t.Error("after a retry: RunningOn says an agent runs")
	}
	hist, _ = History(append(recs, run))
	if lane, ok := hist["b"].LastLane(); ok {
		t.Errorf("in a new run: LastLane %q; want none", lane)
	}
	if lane, ok := (*PhaseHistory)(nil).LastLane(); ok {
		t.Errorf("no history: LastLane %q", lane)
	}
}

// A run's rules as it has them now: the pacer's slot changes ("lanes"
// records) since it started apply; a newer run starts from its own. Side
// runs hold slots from their start to their end, in the newest run only.
func TestLastRulesAndSideRuns(t *testing.T) {
	t.Parallel()
	lanes := []RuleLane{{ID: "claude", Slots: 1}, {ID: "codex", Slots: 2}}
	recs := []Record{
		{Event: "run", Rules: &Rules{Lanes: lanes, Slots: 3}},
		{Event: "side-start", Lane: "claude"},
		{Event: "lanes", Slots: map[string]int{"claude": 3, "codex": 0}},
		{Event: "side-start", Lane: "codex"},
		{Event: "side-end", Lane: "claude"},
	}
	r := LastRules(recs)
	if r == nil || r.Lanes[0].Slots != 3 || r.Lanes[1].Slots != 0 || r.Slots != 3 {
		t.Errorf("LastRules %+v, want claude 3, codex 0, 3 in all", r)
	}
	if lanes[0].Slots != 1 {
		t.Error("LastRules changed the journaled record")
	}
	if side := SideRuns(recs); side["claude"] != 0 || side["codex"] != 1 {
		t.Errorf("SideRuns %v, want codex 1", side)
	}
	recs = append(recs, Record{Event: "run", Rules: &Rules{Lanes: lanes, Slots: 3}})
	if r := LastRules(recs); r.Lanes[0].Slots != 1 || r.Lanes[1].Slots != 2 {
		t.Errorf("a new run's rules %+v, want its own slots", r)
	}
	if side := SideRuns(recs); side["codex"] != 0 {
		t.Errorf("a new run's side runs %v, want none", side)
	}
	if LastRules(nil) != nil || len(SideRuns(nil)) != 0 {
		t.Error("no journal: want no rules, no side runs")
	}
}
