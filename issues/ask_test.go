package issues

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/state"
)

// askAgent asks which licence (naming @everyone, which must not ping);
// told the answer (in its prompt), it commits the answer as its work.
const askAgent = `set -e
n=${CLAUDOPILOT_PHASE#\#}
mkdir -p work
if grep -q 'The answer:' "$CLAUDOPILOT_PROMPT_FILE"; then
	sed -n '/The answer:/,$p' "$CLAUDOPILOT_PROMPT_FILE" > work/answer-$n.txt
	git add work
	git commit -qm "answered #$n"
	exit 0
fi
echo "asked $n" >> "$ASKED"
echo 'CLAUDOPILOT-NEEDS-INPUT: MIT or Apache-2.0? @everyone'
`

// askQueue is a queue on clone dir whose agent is askAgent; lw watches its
// log.
func (e *env) askQueue(dir string, lw *lineWatch) *Queue {
	asked := filepath.Join(e.dir, "asked")
	return e.queueAt(dir, lw.w.(*syncBuf), func(c *Config) {
		c.Instance = "w-" + filepath.Base(dir) // the clone's, across runs
		c.Agent = e.script("ask.sh", askAgent)
		c.Env = append(c.Env, "ASKED="+asked)
		c.Log = lw
	})
}

func newLineWatch() *lineWatch {
	return &lineWatch{w: &syncBuf{}, want: map[string]chan struct{}{}}
}

// answeredOnMain is origin main's work/answer-<n>.txt ("" when missing).
func (e *env) answeredOnMain(n int) string {
	out, _ := e.gitOut(e.origin, "show", "main:work/answer-"+strings.TrimPrefix(IssueID(n), "#")+".txt")
	return out
}

func (e *env) gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = e.genv
	out, err := cmd.Output()
	return string(out), err
}

// An issue's agent asks: the question is posted once on the issue (in a
// code block, so nothing in it pings or links), however many polls pass;
// an outsider's /answer and one from the driver's own account are ignored
// and the log says so; a maintainer's /answer resumes the issue, whose
// work merges with that answer.
func TestIssueQuestionAnsweredOnTheIssue(t *testing.T) {
	t.Parallel()
	if !soak() {
		t.Skip("a queue run: CLAUDOPILOT_SOAK=1 only; TestIssueQuestionAcrossAKill proves the same (one question in a code block, the outsider's and the driver's own /answer ignored and logged, a maintainer's resuming the work) in the run started again after a kill")
	}
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "licence", "pick a licence", []string{"agent-ready"}, "alice")
	lw := newLineWatch()
	askedOn := lw.on("asked on the issue")
	ignored := lw.on("ignored the /answer of mallory")
	q := e.askQueue(e.clone("w"), lw)
	done := make(chan Summary, 1)
	go func() { done <- runWith(t, q, lw.w.(*syncBuf), harness{}) }()
	waitFor(t, askedOn, "the question on the issue", lw.w.(*syncBuf))
	e.fake.CommentOn(n, "mallory", "/answer GPL-3.0")
	waitFor(t, ignored, "mallory's /answer ignored", lw.w.(*syncBuf))
	e.fake.CommentOn(n, "bot", "/answer the driver's own")
	e.fake.CommentOn(n, "alice", "/answer MIT, please")
	sum := <-done
	log := lw.w.(*syncBuf).String()
	if sum.Count(Merged) != 1 {
		t.Fatalf("summary %+v\n%s\n%s", sum, log, dump(e, n))
	}
	if got := e.answeredOnMain(n); !strings.Contains(got, "MIT, please") || strings.Contains(got, "GPL") || strings.Contains(got, "driver's own") {
		t.Errorf("the work merged with %q, want alice's answer only\n%s", got, log)
	}
	is := e.issue(n)
	if c := commentsWith(is, "The agent working on this issue asks"); c != 1 {
		t.Errorf("%d question comments, want 1\n%s", c, dump(e, n))
	}
	for _, c := range is.Comments {
		if strings.Contains(c.Body, "asks:") && !strings.Contains(c.Body, "```\nMIT or Apache-2.0? @everyone\n```") {
			t.Errorf("the question is not in a code block:\n%s", c.Body)
		}
	}
	for _, want := range []string{"ignored the /answer of mallory", "has no write access", "ignored the /answer of bot", "the driver's own account", "answered on the issue"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
}

// A driver killed while an issue's question is open: started again in the
// same clone, it takes the issue back with its question from the journal,
// launches no agent for it and does not ask again on the issue (the one
// question in a code block, so nothing in it pings or links); an
// outsider's /answer and one from the driver's own account are ignored and
// the log says so; a maintainer's /answer then resumes it and the work
// merges with that answer only. (TestIssueQuestionAnsweredOnTheIssue, the
// same without the kill, runs under CLAUDOPILOT_SOAK=1.)
func TestIssueQuestionAcrossAKill(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "licence", "pick a licence", []string{"agent-ready"}, "alice")
	dir := e.clone("w")
	jpath := filepath.Join(dir, ".claudopilot", "state", "journal.jsonl")
	journal := func() *state.Journal {
		jn, err := state.OpenJournal(jpath)
		if err != nil {
			t.Fatal(err)
		}
		return jn
	}

	lw := newLineWatch()
	askedOn := lw.on("asked on the issue")
	q1 := e.askQueue(dir, lw)
	ctx, kill := context.WithCancel(context.Background())
	jn1 := journal()
	done := make(chan error, 1)
	go func() {
		_, err := runQueue(ctx, q1, harness{journal: jn1, kill: true})
		done <- err
	}()
	waitFor(t, askedOn, "the question on the issue", lw.w.(*syncBuf))
	kill()
	<-done
	jn1.Close()

	lw2 := newLineWatch()
	answered := lw2.on("answered on the issue")
	ignored := lw2.on("ignored the /answer of mallory")
	q2 := e.askQueue(dir, lw2)
	jn2 := journal()
	defer jn2.Close()
	res := make(chan Summary, 1)
	go func() { res <- runWith(t, q2, lw2.w.(*syncBuf), harness{journal: jn2}) }()
	e.fake.CommentOn(n, "mallory", "/answer GPL-3.0")
	waitFor(t, ignored, "mallory's /answer ignored", multiLog{lw.w.(*syncBuf), lw2.w.(*syncBuf), e, n})
	e.fake.CommentOn(n, "bot", "/answer the driver's own")
	e.fake.CommentOn(n, "alice", "/answer MIT, please")
	waitFor(t, answered, "the answer taken", multiLog{lw.w.(*syncBuf), lw2.w.(*syncBuf), e, n})
	sum := <-res
	log := lw.w.(*syncBuf).String() + "--- started again ---\n" + lw2.w.(*syncBuf).String()
	if got := e.answeredOnMain(n); sum.Count(Merged) != 1 || !strings.Contains(got, "MIT, please") || strings.Contains(got, "GPL") || strings.Contains(got, "driver's own") {
		t.Fatalf("summary %+v, merged answer %q, want alice's only\n%s\n%s", sum, got, log, dump(e, n))
	}
	is := e.issue(n)
	if c := commentsWith(is, "The agent working on this issue asks"); c != 1 {
		t.Errorf("%d question comments, want 1 across the kill\n%s", c, dump(e, n))
	}
	for _, c := range is.Comments {
		if strings.Contains(c.Body, "asks:") && !strings.Contains(c.Body, "```\nMIT or Apache-2.0? @everyone\n```") {
			t.Errorf("the question is not in a code block:\n%s", c.Body)
		}
	}
	for _, want := range []string{"ignored the /answer of mallory", "has no write access", "ignored the /answer of bot", "the driver's own account", "answered on the issue"} {
		if !strings.Contains(lw2.w.(*syncBuf).String(), want) {
			t.Errorf("the log started again lacks %q:\n%s", want, log)
		}
	}
	b, _ := os.ReadFile(filepath.Join(e.dir, "asked"))
	asked := string(b)
	if strings.Count(asked, "asked") != 1 {
		t.Errorf("the agent asked %d times, want once (no agent for an open question):\n%s", strings.Count(asked, "asked"), log)
	}
	hist, _ := state.History(mustRead(t, jpath))
	if h := hist[IssueID(n)]; h == nil || h.Answer != "MIT, please" {
		t.Errorf("journal history %+v, want the answer", h)
	}
}

func mustRead(t *testing.T, path string) []state.Record {
	t.Helper()
	recs, err := state.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

type multiLog struct {
	a, b *syncBuf
	e    *env
	n    int
}

func (m multiLog) String() string {
	return m.a.String() + "--- started again ---\n" + m.b.String() + dump(m.e, m.n)
}
