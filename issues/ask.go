package issues

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/scheduler"
)

// Needs input on an issue (issue 27 §1). When an issue's agent asks (the
// scheduler tells the Source, scheduler.Asker), the question is posted
// once as a comment on the issue, with a hidden marker naming the
// question's time: a comment with that marker already there (an earlier
// poll, a driver killed and started again) is not posted again. A comment
// after it that starts with "/answer" answers it, when its author is a
// maintainer: the trust rule of the ready label (write access), where the
// driver's own account never counts (its comments quote agents' output).
// Any other author's /answer is ignored, and the log says so once. The
// answer goes to the scheduler as OutsideNode.Answer, as the user's answer
// (`claudopilot answer`) does.

// answerCmd starts a comment that answers an issue's open question.
const answerCmd = "/answer"

// answerMax caps an answer's length: it goes into an agent's prompt.
const answerMax = 8000

// openAsk is an issue's open question, as the scheduler told it.
type openAsk struct {
	question string
	at       time.Time
	offered  int64          // the /answer comment offered to the scheduler; 0 none
	ignored  map[int64]bool // /answer comments ignored (logged once)
}

// askMarker is the hidden line that names the question asked at at.
func askMarker(at time.Time) string {
	return "<!-- claudopilot-ask " + at.UTC().Format(time.RFC3339Nano) + " -->"
}

// Asked implements scheduler.Asker: question asked at at on issue id is
// open (posted on the issue, off the loop); an empty question closes it.
func (s *Source) Asked(id, question string, at time.Time) {
	n, ok := ParseIssueID(id)
	if !ok {
		return
	}
	s.mu.Lock()
	if s.asks == nil {
		s.asks = map[int]*openAsk{}
	}
	if question == "" {
		delete(s.asks, n)
		s.mu.Unlock()
		return
	}
	if a := s.asks[n]; a != nil && a.at.Equal(at) {
		s.mu.Unlock()
		return // told again: asked on the issue already
	}
	s.asks[n] = &openAsk{question: question, at: at, ignored: map[int64]bool{}}
	s.mu.Unlock()
	s.q.keep(n, "the question", func(ctx context.Context) error { return s.q.askOnIssue(ctx, n, question, at) })
}

// askOnIssue posts the question asked at at on issue n, unless a comment
// of the driver's already asks it.
func (q *Queue) askOnIssue(ctx context.Context, n int, question string, at time.Time) error {
	cs, err := q.gh.Comments(ctx, n)
	if err != nil {
		return err
	}
	if askComment(cs, q.gh.Self(), at) >= 0 {
		return nil
	}
	fence := strings.Repeat("`", max(3, longestRun(question, '`')+1))
	body := fmt.Sprintf("The agent working on this issue asks:\n\n%s\n%s\n%s\n\n"+
		"A maintainer answers with a comment that starts with `%s`, for example `%s use SQLite`; "+
		"the agent then goes on with the answer. Unanswered for NEEDS_INPUT_HOURS, the issue is blocked (needs-input).\n%s",
		fence, question, fence, answerCmd, answerCmd, askMarker(at))
	if _, err := q.gh.PostComment(ctx, n, body); err != nil {
		return err
	}
	q.logIssue(n, "asked on the issue: %s", question)
	return nil
}

// askComment is the index in cs of the driver's comment that asks the
// question asked at at; -1 if there is none.
func askComment(cs []Comment, self string, at time.Time) int {
	m := askMarker(at)
	return slices.IndexFunc(cs, func(c Comment) bool { return ownComment(c, self) && strings.Contains(c.Body, m) })
}

// ownComment is true for a comment the driver posted: its account's, or
// one carrying the nonce every comment it posts ends with.
func ownComment(c Comment, self string) bool {
	return (self != "" && strings.EqualFold(c.Author, self)) || strings.Contains(c.Body, "<!-- claudopilot:nonce ")
}

// longestRun is the length of the longest run of r in s.
func longestRun(s string, r rune) int {
	best, cur := 0, 0
	for _, c := range s {
		if c == r {
			cur++
			best = max(best, cur)
		} else {
			cur = 0
		}
	}
	return best
}

// answers reads the comments of the issues whose question is open and
// returns, as nodes, the answers maintainers gave there (each offered
// once).
func (s *Source) answers(ctx context.Context) []scheduler.OutsideNode {
	s.mu.Lock()
	ns := slices.Sorted(maps.Keys(s.asks))
	s.mu.Unlock()
	var out []scheduler.OutsideNode
	for _, n := range ns {
		s.mu.Lock()
		a := s.asks[n]
		s.mu.Unlock()
		if a == nil || a.offered != 0 {
			continue
		}
		cs, err := s.q.gh.Comments(ctx, n)
		if err != nil {
			if ctx.Err() == nil {
				s.q.logIssue(n, "could not read the answers to its question: %v", err)
			}
			continue
		}
		c, text := s.q.answerIn(ctx, n, cs, a)
		if c == 0 {
			continue
		}
		s.mu.Lock()
		a.offered = c
		s.mu.Unlock()
		s.q.logIssue(n, "answered on the issue (comment %d): %s", c, text)
		out = append(out, scheduler.OutsideNode{ID: IssueID(n), Answer: &scheduler.Answer{Asked: a.at, Text: text}})
	}
	return out
}

// answerIn finds in cs (issue n's comments) the first /answer a
// maintainer wrote after the driver asked a's question: its comment id
// and text; 0 when there is none. Other /answer comments are ignored and
// logged once.
func (q *Queue) answerIn(ctx context.Context, n int, cs []Comment, a *openAsk) (int64, string) {
	self := q.gh.Self()
	i := askComment(cs, self, a.at)
	if i < 0 {
		return 0, "" // not asked there yet: nothing answers it
	}
	for _, c := range cs[i+1:] {
		rest, ok := strings.CutPrefix(strings.TrimSpace(c.Body), answerCmd)
		if !ok || rest != "" && !strings.ContainsAny(rest[:1], " \t\r\n") || a.ignored[c.ID] {
			continue
		}
		why := ""
		switch text := cleanAnswer(rest); {
		case ownComment(c, self):
			why = "it is the driver's own account's"
		case text == "":
			why = "it gives no answer"
		default:
			ok, err := q.gh.HasWrite(ctx, c.Author)
			if err != nil {
				return 0, "" // read again at the next poll
			}
			if ok {
				return c.ID, text
			}
			why = c.Author + " has no write access: only a maintainer answers"
		}
		a.ignored[c.ID] = true
		q.logIssue(n, "ignored the /answer of %s (comment %d): %s", c.Author, c.ID, why)
	}
	return 0, ""
}

// cleanAnswer is an answer's text as an agent gets it: trimmed, control
// characters other than newlines and tabs dropped, capped.
func cleanAnswer(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f {
			return -1
		}
		return r
	}, strings.TrimSpace(s))
	if len(s) > answerMax {
		s = strings.ToValidUTF8(s[:answerMax], "")
	}
	return s
}

var _ scheduler.Asker = (*Source)(nil)
