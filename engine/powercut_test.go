package engine_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/worktree"
)

// TestPowerCutLiveManifest is the one end-to-end run of the live
// manifest's recovery (issue 25 §1: the driver writes it without an
// fsync). A real run lands p1; then the two outcomes of a power cut are
// played and the driver started again, in process: the file given back as
// it was before the [merged] write, with its old mtime (the scheduler puts
// the state back), and the file left empty (the engine rebuilds it from
// HEAD's committed manifest and the journal). Both times p1 reads
// [merged], nothing is launched or merged again, the base's reflog does
// not move, and a line says what was put back. Then a person's reset of
// p1 to [pending], written after the landing, stands: p1 runs again. On
// main before this, the first restart launched p1 again and the second
// refused the empty file.
func TestPowerCutLiveManifest(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	top := filepath.Join(dir, "repo")
	env, envList := driverEnv(dir, "1", nil)
	write := func(p, body string) { t.Helper(); writeFile(t, p, body) }
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = top, envList
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	write(filepath.Join(dir, "agent.sh"), controlAgent)
	live := filepath.Join(top, "roadmap", "EXECUTION-MANIFEST.md")
	before := "# M\n\n1. [pending] **p1** — one (deps: none)\n"
	write(live, before)
	write(filepath.Join(top, "roadmap", "p1-one.md"), "# p1\n")
	write(filepath.Join(top, "roadmap", "p2-two.md"), "# p2\n")
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "initial")
	// A person adds a phase line and never commits it: the driver's
	// first write keeps this save as the backup.
	p2 := "2. [failed] **p2** — two (deps: none)\n"
	write(live, before+p2)
	old := time.Now().Add(-time.Minute)

	// run starts the driver once and returns its events and its log; a
	// run that ends in an error fails the test unless mayFail.
	run := func(what string, mayFail bool) (evs []string, log string) {
		t.Helper()
		lb := &lockedBuilder{}
		eng, err := engine.Open(ctx, engine.Options{Dir: filepath.Join(top, "roadmap"), Env: envList, Log: lb,
			Resolve: func(ctx context.Context, g *worktree.Client, rm *roadmap.Roadmap) (engine.Settings, error) {
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
			t.Fatalf("%s: open: %v\nlog:\n%s", what, err, lb.String())
		}
		defer eng.Close()
		done := make(chan error, 1)
		go func() { _, err := eng.Run(ctx); done <- err }()
		for ev := range eng.Events() {
			evs = append(evs, ev.Kind+" "+ev.Phase+" "+ev.Detail)
		}
		if err := <-done; err != nil && !mayFail {
			t.Fatalf("%s: run: %v\nevents:\n%s\nlog:\n%s", what, err, strings.Join(evs, "\n"), lb.String())
		}
		return evs, lb.String()
	}
	launched := func(evs []string) bool {
		for _, e := range evs {
			if strings.HasPrefix(e, scheduler.EvLaunch+" p1") {
				return true
			}
		}
		return false
	}
	wantMerged := func(what string) {
		t.Helper()
		if b, _ := os.ReadFile(live); !strings.Contains(string(b), "[merged] **p1**") {
			t.Errorf("%s: the live manifest holds %q, want p1 [merged]", what, b)
		}
	}

	// (Both runs end in "nothing can progress": p2 is [failed].)
	if evs, _ := run("the landing", true); !launched(evs) {
		t.Fatalf("p1 did not run: %v", evs)
	}
	wantMerged("after the landing")
	reflog := git("reflog", "show", "--format=%H", "refs/heads/main")
	if head := git("show", "HEAD:roadmap/EXECUTION-MANIFEST.md"); strings.Contains(head, "**p2**") {
		t.Fatalf("HEAD's manifest holds the uncommitted line: %q", head)
	}

	// The file left empty: rebuilt from the backup of the person's last
	// save (their p2 line is back) with the journal's p1 [merged].
	write(live, "")
	evs, log := run("the restart on the empty file with a backup", true)
	if launched(evs) || strings.Contains(strings.Join(evs, "\n"), scheduler.EvLaunch+" p2") ||
		!strings.Contains(log, "EXECUTION-MANIFEST.md was empty (a write lost to a power cut): rebuilt from the backup of your last save") {
		t.Errorf("restart on the empty file with a backup: events %v (want no launch)\nlog (want a line naming the backup):\n%s", evs, log)
	}
	wantMerged("after the restart on the empty file with a backup")
	if b, _ := os.ReadFile(live); !strings.Contains(string(b), p2) {
		t.Errorf("the person's uncommitted line is not back: %q", b)
	}

	// The file as it was before the [merged] write, with its old mtime.
	write(live, before)
	if err := os.Chtimes(live, old, old); err != nil {
		t.Fatal(err)
	}
	evs, log = run("the restart on the older file", false)
	if launched(evs) || !strings.Contains(strings.Join(evs, "\n"), "put back p1 [pending] -> [merged]") {
		t.Errorf("restart on the older file: events %v (want no launch, a line putting p1 back)\nlog:\n%s", evs, log)
	}
	wantMerged("after the restart on the older file")

	// The file left empty with no backup: HEAD's committed manifest.
	if err := os.Remove(filepath.Join(top, ".claudopilot", "state", "manifest-last-save.md")); err != nil {
		t.Fatal(err)
	}
	write(live, "")
	evs, log = run("the restart on the empty file", false)
	if launched(evs) || !strings.Contains(log, "EXECUTION-MANIFEST.md was empty (a write lost to a power cut): rebuilt from HEAD's committed manifest") {
		t.Errorf("restart on the empty file: events %v (want no launch)\nlog (want a line naming the rebuild):\n%s", evs, log)
	}
	wantMerged("after the restart on the empty file")
	if got := git("reflog", "show", "--format=%H", "refs/heads/main"); got != reflog {
		t.Errorf("the base moved in the restarts: reflog\n%s\nwant\n%s", got, reflog)
	}

	// A committed manifest with a **Gate:** line: the rebuild stops the
	// start (its settings were read from the empty file), exit 3's
	// error, and the next start reads them.
	write(live, "# M\n\n**Gate:** true\n\n1. [merged] **p1** — one (deps: none)\n")
	git("commit", "-q", "-am", "a gate line")
	write(live, "")
	_, err := engine.Open(ctx, engine.Options{Dir: filepath.Join(top, "roadmap"), Env: envList, Log: &lockedBuilder{},
		Resolve: func(context.Context, *worktree.Client, *roadmap.Roadmap) (engine.Settings, error) {
			return engine.Settings{}, nil
		}})
	var inv *roadmap.InvalidError
	if !errors.As(err, &inv) || !strings.Contains(err.Error(), "start again") {
		t.Errorf("the rebuild of a manifest with a gate: open = %v, want an InvalidError saying to start again", err)
	}
	if b, _ := os.ReadFile(live); !strings.Contains(string(b), "**Gate:** true") || !strings.Contains(string(b), "[merged] **p1**") {
		t.Errorf("the manifest with a gate was rebuilt as %q", b)
	}

	// A person's save half-way (not empty, not a prefix of the rebuild):
	// refused with its file:line, as always, and left as it is.
	half := "# M\n\n**Gate:** true\n\n1. [merged] **p1 — one\n"
	write(live, half)
	if _, err := engine.Open(ctx, engine.Options{Dir: filepath.Join(top, "roadmap"), Env: envList, Log: &lockedBuilder{},
		Resolve: func(context.Context, *worktree.Client, *roadmap.Roadmap) (engine.Settings, error) {
			return engine.Settings{}, nil
		}}); err == nil || !strings.Contains(err.Error(), "EXECUTION-MANIFEST.md:5") {
		t.Errorf("a half-saved manifest: open = %v, want its file:line", err)
	}
	if b, _ := os.ReadFile(live); string(b) != half {
		t.Errorf("a half-saved manifest was changed to %q", b)
	}

	// A person's reset, written after the landing: p1 runs again (its
	// agent fails: its doc is DONE_ already).
	write(live, before)
	if evs, _ := run("the restart after a person's reset", true); !launched(evs) {
		t.Errorf("a person's reset of p1 did not stand: events %v", evs)
	}
}
