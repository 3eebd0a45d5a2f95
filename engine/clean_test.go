package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/gittest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// TestMain makes the test repositories once (cleanRepo's) and removes
// them after the tests.
func TestMain(m *testing.M) {
	gittest.RunWithTemplates(m, "engine-templates-", func(t *gittest.Templates) { templates = t })
}

// templates holds the test binary's repositories, made once (TestMain).
var templates *gittest.Templates

// cleanRepo is a repository with a roadmap of four phases and what runs
// left of them: p1 [merged] (worktree and branch, on main), p2 [blocked]
// (one commit main lacks), p3 [pending] (a run resumes it), p4 [merged]
// whose branch moved on after its merge, p5 [merged] with an uncommitted
// file; and an issue's worktree. Each test gets a copy of one made once
// per test binary (30 git processes: its six worktree adds are four
// each).
func cleanRepo(t *testing.T) (CleanOptions, func(args ...string) string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "repo")
	env := append(gittest.NoAutoMaintenance(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	gitIn := func(top string, args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = top, append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("git %v: %w\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out)), nil
	}
	git := func(args ...string) string {
		t.Helper()
		out, err := gitIn(dir, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	templates.Copy(t, "clean", dir, func(top string) error { return buildCleanRepo(top, gitIn) })
	rmDir := filepath.Join(dir, "roadmap")
	c, err := worktree.Open(ctx, dir, env)
	if err != nil {
		t.Fatal(err)
	}
	rm, err := roadmap.Load(rmDir, roadmap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := MakeLayout(c, rmDir, "main")
	if err != nil {
		t.Fatal(err)
	}
	return CleanOptions{Git: c, Layout: l, Roadmap: rm, Base: "main"}, git
}

// buildCleanRepo makes cleanRepo's repository in top.
func buildCleanRepo(top string, gitIn func(top string, args ...string) (string, error)) error {
	if err := os.MkdirAll(filepath.Join(top, "roadmap"), 0o755); err != nil {
		return err
	}
	manifest := "1. [merged] **p1** — one (deps: none)\n2. [blocked] **p2** — two (deps: none)\n" +
		"3. [pending] **p3** — three (deps: none)\n4. [merged] **p4** — four (deps: none)\n5. [merged] **p5** — five (deps: none)\n"
	if err := os.WriteFile(filepath.Join(top, "roadmap", roadmap.ManifestName), []byte(manifest), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(top, ".gitignore"), []byte("/.claudopilot/\n"), 0o644); err != nil {
		return err
	}
	wt := func(id string) string { return filepath.Join(top, ".claudopilot", "worktrees", id) }
	steps := [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-qm", "roadmap"}}
	for _, id := range []string{"p1", "p2", "p3", "p4", "p5"} {
		steps = append(steps, []string{"worktree", "add", "-q", "-b", "auto/" + id, wt(id), "main"})
	}
	steps = append(steps, []string{"-C", wt("p2"), "commit", "-q", "--allow-empty", "-m", "p2: work"},
		[]string{"-C", wt("p4"), "commit", "-q", "--allow-empty", "-m", "after the merge"},
		[]string{"worktree", "add", "-q", "-b", "claudopilot/issue-12", wt("%2312"), "main"})
	for _, args := range steps {
		if _, err := gitIn(top, args...); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(wt("p5"), "scratch.txt"), []byte("x\n"), 0o644)
}

// plainItems writes each item as "kind phase keep" (or "kind branch keep"
// for an issue), for comparing plans.
func plainItems(items []CleanItem) string {
	var b strings.Builder
	for _, it := range items {
		who := it.Phase
		if it.Kind == CleanIssue || it.Kind == CleanLock {
			who = filepath.Base(it.Path)
		}
		fmt.Fprintf(&b, "%s %s %s\n", it.Kind, who, it.Keep)
	}
	return b.String()
}

// TestCleanPolicy: what clean removes and keeps is decided by PlanClean,
// which changes nothing: landed work goes when main contains it and its
// worktree is clean; parked work only with Parked, and then ParkedWork is
// what to ask about; pending work and issue worktrees stay.
func TestCleanPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o, git := cleanRepo(t)
	before := git("for-each-ref", "--format=%(refname) %(objectname)") + git("worktree", "list", "--porcelain")

	// One listing of the worktrees for the whole plan (the registrations,
	// the phases' leftovers, the issues' work and the litter read it:
	// four git worktree list before).
	trace := filepath.Join(t.TempDir(), "trace")
	plain := o.Git
	o.Git = plain.WithEnv(append(slices.Clone(plain.Env), "GIT_TRACE="+trace))
	plan, err := PlanClean(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	o.Git = plain
	if b, _ := os.ReadFile(trace); strings.Count(string(b), "built-in: git worktree list") != 1 {
		t.Errorf("git worktree list ran %d times in one plan, want 1", strings.Count(string(b), "built-in: git worktree list"))
	}
	want := "worktree p1 \nbranch p1 \nphase p4 not-on-base\nphase p5 dirty\nphase p2 parked\nissue %2312 issue\n"
	if got := plainItems(plan.Items); got != want {
		t.Errorf("plan:\n%s\nwant:\n%s", got, want)
	}
	if len(plan.ParkedWork()) != 0 {
		t.Errorf("without Parked, ParkedWork = %v", plan.ParkedWork())
	}
	if after := git("for-each-ref", "--format=%(refname) %(objectname)") + git("worktree", "list", "--porcelain"); after != before {
		t.Errorf("PlanClean changed the repository:\n%s\nwas:\n%s", after, before)
	}

	o.Parked = true
	plan, err = PlanClean(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	want = "worktree p1 \nbranch p1 \nphase p4 not-on-base\nphase p5 dirty\nworktree p2 \nbranch p2 \nissue %2312 issue\n"
	if got := plainItems(plan.Items); got != want {
		t.Errorf("plan with Parked:\n%s\nwant:\n%s", got, want)
	}
	if ask := plan.ParkedWork(); len(ask) != 1 || ask[0].Phase != "p2" || ask[0].Ahead != 1 || ask[0].Branch != "auto/p2" {
		t.Errorf("ParkedWork = %+v, want p2 with one commit main lacks", ask)
	}
	// Not confirmed: kept, told once.
	plan.KeepParked()
	want = "worktree p1 \nbranch p1 \nphase p4 not-on-base\nphase p5 dirty\nphase p2 unconfirmed\nissue %2312 issue\n"
	if got := plainItems(plan.Items); got != want {
		t.Errorf("plan not confirmed:\n%s\nwant:\n%s", got, want)
	}

	// Removing the plan's items removes exactly those.
	for _, it := range plan.Items {
		if err := plan.Remove(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	branches := git("branch", "--list", "auto/*", "--format=%(refname:short)")
	if branches != "auto/p2\nauto/p3\nauto/p4\nauto/p5" {
		t.Errorf("branches after Remove:\n%s", branches)
	}
	if _, err := os.Stat(filepath.Join(o.Layout.Top, ".claudopilot", "worktrees", "p1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("p1's worktree is still there: %v", err)
	}
}

// TestCleanLock: --parked is refused while a run holds the lock (a dry
// run is not), and then the merge gate is left alone; a stale lock is an
// item whose Remove removes it only while the same dead holder has it.
func TestCleanLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o, git := cleanRepo(t)
	lock := state.LockPath(filepath.Join(o.Layout.Top, ".git"))
	host, _ := os.Hostname()
	writeLock := func(pid int) {
		t.Helper()
		b, _ := json.Marshal(state.LockInfo{PID: pid, Host: host})
		if err := os.WriteFile(lock, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gate := filepath.Join(o.Layout.Top, ".claudopilot", "gate")
	git("worktree", "add", "-q", "--detach", gate, "main")

	writeLock(os.Getpid()) // a live run
	o.Parked = true
	_, err := PlanClean(ctx, o)
	var refused *CleanRefusedError
	if !errors.As(err, &refused) || refused.Holder.PID != os.Getpid() {
		t.Fatalf("--parked beside a live run: %v, want CleanRefusedError", err)
	}
	o.DryRun = true
	plan, err := PlanClean(ctx, o)
	if err != nil {
		t.Fatalf("--parked --dry-run beside a live run: %v", err)
	}
	for _, it := range plan.Items {
		if it.Kind == CleanGate || it.Kind == CleanLock {
			t.Errorf("beside a live run the plan holds %s %s", it.Kind, it.Path)
		}
	}

	writeLock(1 << 30) // a dead holder
	o.Parked, o.DryRun = false, false
	plan, err = PlanClean(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var gates, locks []CleanItem
	for _, it := range plan.Items {
		switch it.Kind {
		case CleanGate:
			gates = append(gates, it)
		case CleanLock:
			locks = append(locks, it)
		}
	}
	if len(gates) != 1 || len(locks) != 1 || !strings.Contains(locks[0].Why, "is gone") {
		t.Fatalf("with a stale lock: gates %v, locks %v", gates, locks)
	}
	// A run took the lock over meanwhile: Remove leaves its lock alone.
	writeLock(os.Getpid())
	if err := plan.Remove(ctx, locks[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("Remove took a live run's lock: %v", err)
	}
	writeLock(1 << 30)
	if err := plan.Remove(ctx, locks[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale lock is still there: %v", err)
	}
}
