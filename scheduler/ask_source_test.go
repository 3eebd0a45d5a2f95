package scheduler

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/state"
)

// askingSource is a source that asks on its own side (an issue comment):
// it hears each question and its close.
type askingSource struct {
	*fakeSource
	asked chan string
}

func (a *askingSource) Asked(id, question string, at time.Time) {
	if question == "" {
		a.asked <- id + " closed"
		return
	}
	a.asked <- fmt.Sprintf("%s %s %s", id, question, at.Format(time.RFC3339Nano))
}

func askingHarness(t *testing.T, cfg Config) (*harness, *askingSource) {
	src := &askingSource{fakeSource: newSource(), asked: make(chan string, 8)}
	h := sourceHarness(t, manifestOf("[merged] **a** — A (deps: none)"), cfg, src.fakeSource)
	h.s.SetSource(src)
	return h, src
}

// An issue's agent asks: the source is told the question and its time,
// an answer the source offers for another question is ignored, the one
// for this question sends the same attempt on with it, and the source is
// told the question is closed.
func TestOutsideAnswerComesFromTheSource(t *testing.T) {
	t.Parallel()
	h, src := askingHarness(t, Config{MaxParallel: 1})
	h.jn = openJournal(t)
	h.s.jn = h.jn
	h.runner.on("#1", state.Worker, asks("MIT or Apache-2.0?"), okStep)
	src.ch <- []OutsideNode{issueNode(1)}
	ch := h.start(context.Background())
	ev := h.ev.wait(t, "the question", isEv(EvAsk, "#1"))
	want := "#1 MIT or Apache-2.0? " + ev.Time.Format(time.RFC3339Nano)
	if got := <-src.asked; got != want {
		t.Fatalf("the source heard %q, want %q", got, want)
	}
	src.ch <- []OutsideNode{{ID: "#1", Answer: &Answer{Asked: ev.Time.Add(-time.Minute), Text: "stale"}}}
	src.ch <- []OutsideNode{{ID: "#1", Answer: &Answer{Asked: ev.Time, Text: "MIT"}}}
	if got := <-src.asked; got != "#1 closed" {
		t.Fatalf("the source heard %q, want the question closed", got)
	}
	close(src.ch)
	sum, evs, err := h.await(ch)
	if err != nil {
		t.Fatalf("%v\n%s", err, fmtEvents(evs))
	}
	js := h.runner.jobsOf("#1", state.Worker)
	if len(js) != 2 || js[1].Answer != "MIT" || js[1].Attempt != 1 || js[1].Outside == nil {
		t.Fatalf("#1's jobs %+v, want attempt 1 again with the answer MIT", js)
	}
	if st := phaseSummary(t, sum, "#1").State; st != "merged" {
		t.Errorf("#1 is %s, want merged", st)
	}
}

// A driver killed while an issue's question was open: resumed, the issue
// launches nothing, its source is told the question again (to ask once
// where it asks), and the source's answer sends the attempt on. One
// answered before the kill goes on with that answer at once.
func TestOutsideQuestionAcrossRestart(t *testing.T) {
	t.Parallel()
	// An hour ago, with a sub-second part: a fixed date here became a
	// question past its NEEDS_INPUT_HOURS deadline a day later (parked
	// before the answer came: the test failed from 2026-12-06 02:00 on).
	at := time.Now().UTC().Truncate(time.Second).Add(-time.Hour + 123456*time.Microsecond)
	for _, answered := range []bool{false, true} {
		t.Run(fmt.Sprint("answered=", answered), func(t *testing.T) {
			t.Parallel()
			h, src := askingHarness(t, Config{MaxParallel: 1})
			jn, err := state.OpenJournal(filepath.Join(t.TempDir(), "journal.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer jn.Close()
			recs := []state.Record{
				{Phase: "#1", Event: "launch", Role: state.Worker, Attempt: 1},
				{Time: at, Phase: "#1", Event: EvAsk, Role: state.Worker, Attempt: 1, Detail: "which port?", Until: at.Add(DefaultNeedsInputWait)},
			}
			if answered {
				recs = append(recs, state.Record{Phase: "#1", Event: EvAnswer, Role: state.Worker, Detail: "8080"})
			}
			for _, r := range recs {
				if err := jn.Append(r); err != nil {
					t.Fatal(err)
				}
			}
			h.s.jn = jn
			h.runner.on("#1", state.Worker, okStep)
			n := issueNode(1)
			n.Resume = true
			src.ch <- []OutsideNode{n}
			ch := h.start(context.Background())
			if !answered {
				if got, want := <-src.asked, "#1 which port? "+at.Format(time.RFC3339Nano); got != want {
					t.Fatalf("the source heard %q, want %q", got, want)
				}
				if js := h.runner.jobsOf("#1", state.Worker); len(js) != 0 {
					t.Fatalf("launched %+v while the question was open", js)
				}
				src.ch <- []OutsideNode{{ID: "#1", Answer: &Answer{Asked: at, Text: "8080"}}}
			}
			close(src.ch)
			_, evs, err := h.await(ch)
			if err != nil {
				t.Fatalf("%v\n%s", err, fmtEvents(evs))
			}
			js := h.runner.jobsOf("#1", state.Worker)
			if len(js) != 1 || js[0].Answer != "8080" || js[0].Question != "which port?" || js[0].Attempt != 1 {
				t.Fatalf("#1's jobs %+v, want attempt 1 with the question and the answer", js)
			}
			if got := src.recorded(); len(got) == 0 || got[len(got)-1] != "#1 "+string(manifest.Merged)+" " {
				t.Errorf("records %q, want #1 merged", got)
			}
		})
	}
}
