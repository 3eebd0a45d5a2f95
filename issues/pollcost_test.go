package issues

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestIdlePollCostsLittle: 50 ready issues all wait on one open
// dependency. Each idle poll (nothing changed, no agent running) must
// cost at most 3 requests of the rate limit: every GET is conditional
// (GitHub does not count a 304), and an issue's events are read only
// when the issue changed. Before, each poll read every waiting issue's
// events again, unconditionally (issue 24 §5: 30.6 requests a poll,
// 1,836 an hour at POLL_SECONDS=60, over Actions' 1,000). A change is
// still seen at once: the dependency closed, all 50 are offered.
func TestIdlePollCostsLittle(t *testing.T) {
	t.Parallel()
	e := newEnvPaged(t, 100)
	dep := e.fake.NewIssue("alice", "the dependency", "not queued", nil, "")
	for i := 0; i < 50; i++ {
		e.fake.NewIssue("alice", fmt.Sprintf("waits %d", i), fmt.Sprintf("Depends on #%d", dep), []string{"agent-ready"}, "")
	}
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) { c.BatchSize = 50 })
	ctx := context.Background()
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	none := func(int) bool { return false }
	hooks := pollHooks{held: none, live: none, mine: none, adopt: func(context.Context, int, int64) bool { return false }}
	st := &pollState{skipLogged: map[int]string{}, waitLogged: map[int]string{}}
	poll := func() int {
		t.Helper()
		before := e.fake.Counted("core")
		nodes, err := q.poll(ctx, st, hooks)
		if err != nil {
			t.Fatalf("poll: %v\n%s", err, log)
		}
		if len(nodes) != 0 {
			t.Fatalf("%d issues offered while their dependency is open", len(nodes))
		}
		return e.fake.Counted("core") - before
	}
	first := poll()
	const polls = 10
	idle := 0
	for i := 0; i < polls; i++ {
		e.clock.Advance(time.Minute) // past the permission cache's 5 minutes too
		idle += poll()
	}
	per := float64(idle) / polls
	t.Logf("counted requests: first poll %d, then %.1f per idle poll (50 waiting issues)", first, per)
	if per > 3 {
		t.Errorf("%.1f counted requests per idle poll, want at most 3", per)
	}
	// A change is seen at once.
	e.fake.CloseIssue(dep, "completed", "alice")
	nodes, err := q.poll(ctx, st, hooks)
	if err != nil || len(nodes) != 50 {
		t.Errorf("after the dependency closed: %d issues offered, %v", len(nodes), err)
	}
}
