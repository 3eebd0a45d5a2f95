package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/control"
	"github.com/claudopilot/claudopilot/state"
)

// An answer from the page names the question it was shown: one the agent
// asked since is not answered with it (the page showed "which port?",
// the agent has gone on and now asks "which database?"). Without the time
// (the CLI), the open question is answered.
func TestAnswerNamesItsQuestion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jn, err := state.OpenJournal(state.JournalIn(dir))
	if err != nil {
		t.Fatal(err)
	}
	first := time.Date(2026, 12, 5, 2, 15, 0, 0, time.UTC)
	second := first.Add(time.Hour)
	for _, r := range []state.Record{
		{Time: first, Phase: "a", Event: "ask", Role: state.Worker, Detail: "which port?"},
		{Time: first.Add(time.Minute), Phase: "a", Event: "answer", Role: state.Worker, Detail: "8080"},
		{Time: second, Phase: "a", Event: "ask", Role: state.Worker, Detail: "which database?"},
	} {
		if err := jn.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	jn.Close()
	_, q, err := AnswerAsked(dir, "a", first, "SQLite")
	if !errors.Is(err, ErrNoQuestion) || !strings.Contains(err.Error(), `asked another question since: "which database?"`) || q != "which database?" {
		t.Fatalf("an answer to the first question: %q, %v; want it refused, naming the new one", q, err)
	}
	if sw, _ := control.Load(dir); len(sw.Answers) != 0 {
		t.Fatalf("refused, yet written: %+v", sw.Answers)
	}
	if _, _, err := AnswerAsked(dir, "a", second, "Postgres"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Answer(dir, "a", "Postgres, really"); err != nil {
		t.Fatal(err)
	}
	sw, _ := control.Load(dir)
	if a := sw.Answers["a"]; !a.Asked.Equal(second) || a.Text != "Postgres, really" {
		t.Errorf("answers %+v, want the second question's", sw.Answers)
	}
}
