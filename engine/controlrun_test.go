package engine_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/worktree"
)

// controlAgent holds p2's first attempt until it is stopped (a worker
// that needs a poke); every other attempt does its phase's work and its
// DONE_ rename in one commit. Its few processes are the test's cost
// (issue 23): the shell's own expansions, not dirname and basename.
const controlAgent = `#!/bin/sh
set -eu
cat >/dev/null
if [ "$CLAUDOPILOT_PHASE" = p2 ] && [ ! -e "$D/p2-held" ]; then
	: > "$D/p2-held"
	exec sleep 600
fi
mkdir -p work
echo "$CLAUDOPILOT_PHASE" > "work/$CLAUDOPILOT_PHASE.txt"
doc=$CLAUDOPILOT_PHASE_DOC
git mv "$doc" "${doc%/*}/DONE_${doc##*/}"
git add -A work
git commit -q -m "$CLAUDOPILOT_PHASE: work, done"
`

// TestControlFilesWhileRunning: a running driver reads Claudopilot's
// control files on its own one-second ticker (the real one, in a real
// run of the engine with a shell agent): p1.retry, dropped while p2's
// worker runs, sets the [blocked] p1 back to [pending] and it runs and
// lands; p2.poke, in Claudopilot 1.0's folder (.claudopilot/.run/control),
// stops p2's held worker and relaunches it at no attempt, and it lands. The test waits on the run's events, never on a clock.
func TestControlFilesWhileRunning(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	top := filepath.Join(dir, "repo")
	env, envList := driverEnv(dir, "2", map[string]string{"D": dir})
	write := func(p, body string) { t.Helper(); writeFile(t, p, body) }
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = top, envList
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write(filepath.Join(dir, "agent.sh"), controlAgent)
	write(filepath.Join(top, "roadmap", "EXECUTION-MANIFEST.md"), "# M\n\n1. [blocked] **p1** — one (deps: none)\n2. [pending] **p2** — two (deps: none)\n")
	write(filepath.Join(top, "roadmap", "p1-one.md"), "# p1\n")
	write(filepath.Join(top, "roadmap", "p2-two.md"), "# p2\n")
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "initial")

	rmDir := filepath.Join(top, "roadmap")
	log := &lockedBuilder{}
	eng, err := engine.Open(ctx, engine.Options{Dir: rmDir, Env: envList, Log: log,
		Resolve: func(ctx context.Context, g *worktree.Client, rm *roadmap.Roadmap) (engine.Settings, error) {
			// The settings' defaults, as wire.Engine maps them (not
			// imported: it links the Kubernetes client into this test).
			s, err := settings.Resolve(settings.Input{Scope: settings.Run, Env: env, Top: g.Dir})
			if err != nil {
				return engine.Settings{}, err
			}
			return engine.Settings{
				MaxParallel: s.MaxParallel, MaxSuper: s.MaxSupervisor, Transient: s.TransientRetries, LogCapMB: s.LogCapMB,
				SecretScan: s.SecretScan, MergeBatch: s.MergeBatch, GateSlots: s.GateSlots, TrainWait: s.TrainWait,
				Gate: s.Gate, Agent: s.Agent, Super: s.Supervisor, Poll: s.Poll, RateSleep: s.RateLimitSleep,
				StuckPokes: s.StuckPokes, Protect: s.Protected(g.Dir), Base: "main", BaseExplicit: true, Lanes: engine.Lanes{Pace: s.Pace},
			}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctl := filepath.Join(top, ".claudopilot", engine.ControlDir)
	ctlV1 := filepath.Join(top, ".claudopilot", filepath.FromSlash(engine.ControlDirV1))
	done := make(chan error, 1)
	go func() { _, err := eng.Run(ctx); done <- err }()

	// next returns the first event after the ones read that matches.
	var seen []string
	next := func(what string, match func(scheduler.Event) bool) scheduler.Event {
		t.Helper()
		for ev := range eng.Events() {
			seen = append(seen, ev.Kind+" "+ev.Phase+" "+ev.Detail)
			if match(ev) {
				return ev
			}
		}
		t.Fatalf("the run ended before %s; events:\n%s\nlog:\n%s", what, strings.Join(seen, "\n"), log.String())
		return scheduler.Event{}
	}
	is := func(kind, phase string) func(scheduler.Event) bool {
		return func(ev scheduler.Event) bool { return ev.Kind == kind && ev.Phase == phase }
	}
	next("p2's launch", is(scheduler.EvLaunch, "p2"))
	write(filepath.Join(ctl, "p1.retry"), "\n")
	next("p1's launch after its retry file", is(scheduler.EvLaunch, "p1"))
	next("p1's landing", is(scheduler.EvMerged, "p1"))
	write(filepath.Join(ctlV1, "p2.poke"), "\n")
	if ev := next("p2's poke", is(scheduler.EvRetry, "p2")); !strings.Contains(ev.Detail, "poked by hand") {
		t.Errorf("p2's relaunch says %q, want a poke by hand", ev.Detail)
	}
	if ev := next("p2's relaunch", is(scheduler.EvLaunch, "p2")); ev.Attempt != 1 {
		t.Errorf("p2 relaunched as attempt %d, want 1 (a poke spends no attempt)", ev.Attempt)
	}
	next("p2's landing", is(scheduler.EvMerged, "p2"))
	for range eng.Events() {
	}
	if err := <-done; err != nil {
		t.Fatalf("run: %v\nlog:\n%s", err, log.String())
	}
	for _, d := range []string{ctl, ctlV1} {
		if left, _ := os.ReadDir(d); len(left) != 0 {
			t.Errorf("%d control files left in %s", len(left), d)
		}
	}
	for _, want := range []string{"control: p1: retry: p1 set back to [pending]", "control: p2: poke"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
}

// lockedBuilder is the run's log: written by the engine's goroutines,
// read by the test.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
