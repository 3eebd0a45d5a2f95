package engine

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/state"
)

// ErrNoQuestion: the node named has no open question to answer.
var ErrNoQuestion = errors.New("no open question")

// Answer gives text as the answer to the open question of node id (a
// phase, or an issue "#12" or "12") in the repository whose state folder
// is stateDir: the running driver takes it within a second, the next run
// at its start. It returns the node's id as the journal has it and the
// question answered.
func Answer(stateDir, id, text string) (node, question string, err error) {
	return AnswerAsked(stateDir, id, time.Time{}, text)
}

// AnswerAsked is Answer for the question asked at asked only (the one a
// page showed): another asked since, it is refused, so an answer meant
// for one question never goes to the next. A zero asked: the open one.
func AnswerAsked(stateDir, id string, asked time.Time, text string) (node, question string, err error) {
	recs, err := state.ReadJournal(state.JournalIn(stateDir))
	if err != nil {
		return "", "", err
	}
	hist, _ := state.History(recs)
	node = id
	if hist[node] == nil && !strings.HasPrefix(id, "#") && hist["#"+id] != nil {
		node = "#" + id
	}
	h := hist[node]
	switch {
	case h == nil || h.Question == "":
		return node, "", fmt.Errorf("%w: %s never asked anything (claudopilot status lists the questions waiting on you)", ErrNoQuestion, id)
	case h.Last == "answer":
		return node, h.Question, fmt.Errorf("%w: %s's question %q is answered already (%q); the driver goes on with it", ErrNoQuestion, id, h.Question, h.Answer)
	case h.Last != "ask":
		return node, h.Question, fmt.Errorf("%w: %s's last question %q is no longer open (it was answered, or parked unanswered: claudopilot retry %s)", ErrNoQuestion, id, h.Question, id)
	case !asked.IsZero() && !asked.Equal(h.Asked):
		return node, h.Question, fmt.Errorf("%w: %s's agent has asked another question since: %q; read it and answer that one", ErrNoQuestion, id, h.Question)
	}
	return node, h.Question, SetAnswer(stateDir, node, h.Asked, text)
}
