package scheduler

import (
	"context"
	"slices"
	"testing"
)

// TestOutsideNodesStartInOfferedOrder: outside nodes of the same priority
// and remaining path start in the order their source offered them (the
// issues' ISSUE_ORDER: oldest or newest first, issues.TestPollOrder), and
// a higher priority (a campaign's issue) goes before them: with one slot,
// #2, #1, #3 offered in that order with #3 a campaign's start as #3, #2, #1.
func TestOutsideNodesStartInOfferedOrder(t *testing.T) {
	src := newSource()
	h := sourceHarness(t, manifestOf("[merged] **a** — A (deps: none)"), Config{MaxParallel: 1}, src)
	camp := issueNode(3)
	camp.Priority = 1
	src.ch <- []OutsideNode{issueNode(2), issueNode(1), camp}
	close(src.ch)
	_, evs, err := h.run(context.Background())
	if err != nil {
		t.Fatalf("run: %v\n%s", err, fmtEvents(evs))
	}
	var launched []string
	for _, ev := range evs {
		if ev.Kind == EvLaunch {
			launched = append(launched, ev.Phase)
		}
	}
	if want := []string{"#3", "#2", "#1"}; !slices.Equal(launched, want) {
		t.Errorf("launched %v, want %v\n%s", launched, want, fmtEvents(evs))
	}
}
