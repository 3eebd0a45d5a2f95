package land_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/internal/gittest"
	"github.com/claudopilot/claudopilot/land"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// The tests below drive Owner.Merge against real repositories: branch main
// checked out in the main worktree, a committed roadmap, and phase branches
// auto/<id> prepared by hand in worktrees at Layout.Worktree(id).

const manifestSrc = `# Execution Manifest

**Status:** in-progress
**Gate:** true

Some prose the driver keeps.

1. [pending] **p1** — first phase (deps: none) (est: 30m)
2. [pending] **p2** — second phase (deps: p1) (owns: api/)
`

const manifestRel = "roadmap/EXECUTION-MANIFEST.md"

// testEnv is the process environment without any GIT_* variable, plus an
// isolated config and a fixed identity, so neither git nor the gates read
// the machine's configuration.
func testEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "CLAUDOPILOT_") {
			env = append(env, kv)
		}
	}
	env = append(env, gittest.NoAutoMaintenance()...)
	return append(env,
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test Author",
		"GIT_AUTHOR_EMAIL=author@example.com",
		"GIT_COMMITTER_NAME=Test Committer",
		"GIT_COMMITTER_EMAIL=committer@example.com",
	)
}

type fixture struct {
	t      *testing.T
	ctx    context.Context
	git    *worktree.Client
	top    string
	layout state.Layout
	live   *roadmap.File
	owner  *land.Owner
	env    []string
}

// newFixture makes a repository with main checked out, README.md, a.txt,
// b.txt and the roadmap (manifest src, docs p1-first.md and p2-second.md)
// committed, .claudopilot/ excluded, the gate worktree (land.GateDir) at
// main, and an Owner for it.
func newFixture(t *testing.T, src string) *fixture {
	t.Helper()
	return newFixtureAt(t, src, "roadmap")
}

// newFixtureAt is newFixture with the roadmap in folder rel ("." = the
// repository's top level).
func newFixtureAt(t *testing.T, src, rel string) *fixture {
	t.Helper()
	return newFixtureWith(t, src, rel, nil)
}

// newFixtureWith is newFixtureAt with more files (path → content) in the
// initial commit.
func newFixtureWith(t *testing.T, src, rel string, more map[string]string) *fixture {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "repo")
	env := testEnv()
	key := rel + "\x00" + src
	for _, p := range slices.Sorted(maps.Keys(more)) {
		key += "\x00" + p + "\x00" + more[p]
	}
	templates.Copy(t, key, dir, func(dir string) error { return makeRepo(ctx, dir, env, src, rel, more) })
	// The copy is a repository with dir its top level and its own .git:
	// no rev-parse to say so (worktree.Known; Open's one git a test).
	top, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := worktree.Known(top, filepath.Join(top, ".git"), env)
	// The long-lived cat-file ends with the test (after the cleanups
	// below), before the test's folder goes.
	t.Cleanup(g.Close)
	f := &fixture{t: t, ctx: ctx, git: g, top: g.Dir, env: env}
	f.layout = state.Layout{Top: g.Dir, RoadmapRel: rel, Base: "main"}
	f.live = roadmap.NewFile(filepath.Join(g.Dir, filepath.FromSlash(f.layout.ManifestRel())))
	f.owner = &land.Owner{Git: g, Layout: f.layout, Live: f.live, Env: env, KillGrace: 2 * time.Second}
	// Before the temp folder goes: cleanups of landed phases run in the
	// background. The registrations they leave go with the folder: no
	// prune (Wait's), one git process a test that landed.
	t.Cleanup(func() { land.WaitCleanups(f.owner) })
	f.owner.Protect = f.protectedSet()
	return f
}

// templates holds newFixtureAt's repositories, made once per test
// binary (TestMain) and copied for each test.
var templates *gittest.Templates

func TestMain(m *testing.M) {
	gittest.RunWithTemplates(m, "land-templates-", func(t *gittest.Templates) { templates = t })
}

// makeRepo makes newFixtureWith's repository in dir: main checked out,
// README.md, a.txt, b.txt, the roadmap in folder rel (manifest src, docs
// p1-first.md and p2-second.md) and the more files committed,
// .claudopilot/ excluded, the gate worktree added.
func makeRepo(ctx context.Context, dir string, env []string, src, rel string, more map[string]string) error {
	cmd := exec.Command("git", "init", "-q", "-b", "main", dir)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git init: %w\n%s", err, out)
	}
	g, err := worktree.Open(ctx, dir, env)
	if err != nil {
		return err
	}
	l := state.Layout{Top: g.Dir, RoadmapRel: rel, Base: "main"}
	files := map[string]string{"README.md": "readme\n", "a.txt": "a\n", "b.txt": "b\n", l.ManifestRel(): src,
		l.DocRel("p1-first.md"): "# p1\n", l.DocRel("p2-second.md"): "# p2\n"}
	maps.Copy(files, more)
	for p, c := range files {
		p = filepath.Join(g.Dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			return err
		}
	}
	if _, err := g.Git(ctx, "add", "-A"); err != nil {
		return err
	}
	if _, err := g.Git(ctx, "commit", "-q", "-m", "initial"); err != nil {
		return err
	}
	if err := g.Exclude(ctx, "/.claudopilot/"); err != nil {
		return err
	}
	// The gate worktree a run's first landing makes (git worktree add:
	// three processes), made once here: each test's landings find it as
	// a run's later ones do. TestMergeGateWorktreeRebuilt makes it anew.
	_, err = g.Git(ctx, "worktree", "add", "--quiet", "--detach", land.GateDir(l), "main")
	return err
}

func (f *fixture) gitIn(dir string, args ...string) string {
	f.t.Helper()
	out, err := f.git.GitIn(f.ctx, dir, args...)
	if err != nil {
		f.t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// rev resolves spec to a commit (a "^{tree}" spec to a tree) through the
// client's long-lived cat-file, which the landings use too: a rev-parse
// process each before (56 calls in the package's tests).
func (f *fixture) rev(spec string) string {
	f.t.Helper()
	h, err := f.git.RevParse(f.ctx, spec)
	if err != nil {
		f.t.Fatalf("resolve %s: %v", spec, err)
	}
	return h
}

func (f *fixture) write(dir, rel, content string) {
	f.t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) read(dir, rel string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// commitOn commits files in worktree dir, staging only them (the live
// manifest in the main worktree stays dirty and unstaged), and returns HEAD.
func (f *fixture) commitOn(dir, msg string, files map[string]string) string {
	f.t.Helper()
	var paths []string
	for p, c := range files {
		f.write(dir, p, c)
		paths = append(paths, p)
	}
	f.gitIn(dir, append([]string{"add", "--"}, paths...)...)
	f.gitIn(dir, "commit", "-q", "-m", msg)
	return f.head(dir)
}

// head is the commit HEAD names in worktree dir, read from its files
// where they say it plainly (gittest.Head: no rev-parse).
func (f *fixture) head(dir string) string {
	f.t.Helper()
	if h, ok := gittest.Head(dir); ok {
		return h
	}
	return f.gitIn(dir, "rev-parse", "HEAD")
}

// branch cuts auto/<id> from main, commits files there with the doc
// renamed to DONE_, links the phase's worktree to it and returns both. The
// live manifest says [running], as the scheduler leaves it. The commit is
// imported (gittest.Import: no process) and the worktree linked without a
// checkout (gittest.LinkWorktree, no git): a landing reads the branch and removes
// the folder, never looks inside it. A test that works in the worktree,
// or whose landing runs a command there (a lockfile regeneration), uses
// branchOut. `worktree add -b`, `mv`, `add`, `commit` and `rev-parse`
// were eight processes, `worktree add` of the imported branch three, its
// `reset --hard` one.
func (f *fixture) branch(id, doc string, files map[string]string) (wt, tip string) {
	f.t.Helper()
	return f.branchCommit(id, f.work(id, doc, files), false)
}

// phase is one branch of branches: the phase, its doc, its files.
type phase struct {
	id, doc string
	files   map[string]string
}

// branches is branch for several phases at once, their commits in one
// gittest.Import; it returns their tips.
func (f *fixture) branches(ps ...phase) []string {
	f.t.Helper()
	cs := make([]gittest.Commit, len(ps))
	for i, p := range ps {
		cs[i] = f.work(p.id, p.doc, p.files)
	}
	tips := gittest.Import(f.t, f.env, f.top, cs...)
	for _, p := range ps {
		gittest.LinkWorktree(f.t, f.top, f.layout.Worktree(p.id), f.layout.Branch(p.id))
		if err := f.live.SetState(p.id, manifest.Running); err != nil {
			f.t.Fatal(err)
		}
	}
	return tips
}

// branchOut is branch with the worktree checked out (gittest.Worktree:
// one git).
func (f *fixture) branchOut(id, doc string, files map[string]string) (wt, tip string) {
	f.t.Helper()
	return f.branchCommit(id, f.work(id, doc, files), true)
}

// work is branch's commit on auto/<id>.
func (f *fixture) work(id, doc string, files map[string]string) gittest.Commit {
	c := gittest.Commit{Ref: f.layout.Branch(id), From: "main^0", Message: "work on " + id, Files: files}
	if doc != "" {
		c.Renames = [][2]string{{f.layout.DocRel(doc), f.layout.DocRel(roadmap.DonePrefix + doc)}}
	}
	return c
}

// branchCommit imports c (on auto/<id>) and adds the phase's worktree on
// it, checked out or only linked (branch), the live manifest saying
// [running].
func (f *fixture) branchCommit(id string, c gittest.Commit, checkout bool) (wt, tip string) {
	f.t.Helper()
	wt = f.layout.Worktree(id)
	tip = gittest.Import(f.t, f.env, f.top, c)[0]
	if checkout {
		gittest.Worktree(f.t, f.env, f.top, wt, f.layout.Branch(id))
	} else {
		gittest.LinkWorktree(f.t, f.top, wt, f.layout.Branch(id))
	}
	if err := f.live.SetState(id, manifest.Running); err != nil {
		f.t.Fatal(err)
	}
	return wt, tip
}

// fresh cuts auto/<id> at main with nothing committed, in its worktree
// (a running phase before its first commit): the ref file written as git
// writes a loose ref, the worktree linked by gittest.Worktree, one
// process where `git worktree add -b` is three.
func (f *fixture) fresh(id string) {
	f.t.Helper()
	f.write(filepath.Join(f.top, ".git", "refs", "heads"), f.layout.Branch(id), f.rev("main")+"\n")
	gittest.Worktree(f.t, f.env, f.top, f.layout.Worktree(id), f.layout.Branch(id))
}

func (f *fixture) committed(rev, rel string) string {
	f.t.Helper()
	b, ok, err := f.git.ReadFile(f.ctx, rev, rel)
	if err != nil || !ok {
		f.t.Fatalf("read %s:%s: ok=%v err=%v", rev, rel, ok, err)
	}
	return string(b)
}

func (f *fixture) branchExists(id string) bool {
	f.t.Helper()
	ok, err := f.git.BranchExists(f.ctx, f.layout.Branch(id))
	if err != nil {
		f.t.Fatal(err)
	}
	return ok
}

// status is `git status --porcelain` of the main worktree, one entry a line.
func (f *fixture) status() []string {
	f.t.Helper()
	out := f.gitIn(f.top, "status", "--porcelain", "--untracked-files=all")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

func job(id, title, tip string) scheduler.MergeJob {
	return scheduler.MergeJob{ID: id, Title: title, Tip: tip, Gate: "true"}
}

func flipped(src, id string) string {
	return strings.Replace(src, "[pending] **"+id+"**", "[merged] **"+id+"**", 1)
}

// mustMerge merges and fails the test unless the outcome is a plain OK.
func (f *fixture) mustMerge(j scheduler.MergeJob) scheduler.MergeOutcome {
	f.t.Helper()
	out := f.owner.Merge(f.ctx, j)
	// The cleanup runs in the background. Its registration stays until
	// a prune (Owner.Wait, which TestMergeClean and
	// TestLandedWorktreesPrunedOnce call): not one a landing.
	land.WaitCleanups(f.owner)
	if !out.OK || out.Err != nil || out.Reason != "" || len(out.Wait) > 0 {
		f.t.Fatalf("Merge(%s) = %+v, want OK", j.ID, out)
	}
	return out
}

// refused checks a merge that did not land: main unchanged, the branch and
// worktree kept, the live manifest still [running].
func (f *fixture) refused(out scheduler.MergeOutcome, id, base string) {
	f.t.Helper()
	if out.OK || out.Commit != "" {
		f.t.Errorf("outcome = %+v, want not OK", out)
	}
	if got := f.rev("main"); got != base {
		f.t.Errorf("main moved to %s, want it at %s", got, base)
	}
	if !f.branchExists(id) || !exists(f.layout.Worktree(id)) {
		f.t.Errorf("the branch or worktree of %s is gone after a refused merge", id)
	}
	if live := f.read(f.top, manifestRel); !strings.Contains(live, "[running] **"+id+"**") {
		f.t.Errorf("live manifest changed by a refused merge:\n%s", live)
	}
}

func TestMergeClean(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	base := f.rev("main")
	wt, tip := f.branch("p1", "p1-first.md", map[string]string{"feature/f.txt": "feature\n", "a.txt": "a from p1\n"})

	out := f.mustMerge(job("p1", "first phase (deps: none) (est: 30m)", tip))
	if out.Detail != "" {
		t.Errorf("Detail = %q, want empty", out.Detail)
	}
	head := f.rev("main")
	if out.Commit != head {
		t.Errorf("Commit = %s, main = %s", out.Commit, head)
	}
	if got, want := f.gitIn(f.top, "rev-list", "--parents", "-n", "1", "main"), head+" "+base+" "+tip; got != want {
		t.Errorf("parents: %q, want %q", got, want)
	}
	if got := f.gitIn(f.top, "log", "-1", "--format=%B", "main"); got != "Merge p1: first phase" {
		t.Errorf("message = %q, want %q", got, "Merge p1: first phase")
	}
	if n := f.gitIn(f.top, "rev-list", "--count", base+"..main"); n != "2" {
		t.Errorf("%s new commits on main, want 2 (the work and the merge)", n)
	}
	// The merge is the branch plus the manifest flip, nothing else.
	if got := f.committed("main", manifestRel); got != flipped(manifestSrc, "p1") {
		t.Errorf("committed manifest:\n%s\nwant:\n%s", got, flipped(manifestSrc, "p1"))
	}
	if d := f.gitIn(f.top, "diff", "--name-only", tip, "main"); d != manifestRel {
		t.Errorf("merge differs from the branch tip in %q, want only the manifest", d)
	}
	// The checkout moved forward.
	if got := f.read(f.top, "feature/f.txt"); got != "feature\n" {
		t.Errorf("feature/f.txt = %q", got)
	}
	if got := f.read(f.top, "a.txt"); got != "a from p1\n" {
		t.Errorf("a.txt = %q", got)
	}
	if exists(filepath.Join(f.top, "roadmap/p1-first.md")) || !exists(filepath.Join(f.top, "roadmap/DONE_p1-first.md")) {
		t.Errorf("the doc rename did not reach the checkout")
	}
	for _, l := range f.status() {
		if !strings.HasSuffix(l, manifestRel) {
			t.Errorf("git status after the merge: %q", l)
		}
	}
	// The live manifest says merged, and equals what was committed.
	if live := f.read(f.top, manifestRel); live != flipped(manifestSrc, "p1") {
		t.Errorf("live manifest:\n%s", live)
	}
	if exists(wt) {
		t.Errorf("worktree %s still there", wt)
	}
	f.owner.Wait() // the prune of the removed worktree's registration
	if list := f.gitIn(f.top, "worktree", "list", "--porcelain"); strings.Contains(list, wt) {
		t.Errorf("worktree still registered:\n%s", list)
	}
	if f.branchExists("p1") {
		t.Errorf("branch auto/p1 not deleted")
	}
	// The merge commit is gated on a clean checkout, even when the base
	// had nothing new: the phase's own gate ran beside untracked files.
	if !exists(f.layout.LogPath("p1", "gate", 1)) {
		t.Errorf("the merge gate did not run")
	}
}

func TestMergeCompleteOnLastPhase(t *testing.T) {
	t.Parallel()
	src := strings.Replace(manifestSrc, "[pending] **p1**", "[merged] **p1**", 1)
	f := newFixture(t, src)
	_, tip := f.branch("p2", "p2-second.md", map[string]string{"api/x.go": "package api\n"})
	j := job("p2", "second phase (deps: p1) (owns: api/)", tip)
	j.Owns, j.Complete = []string{"api/"}, true
	f.mustMerge(j)
	want := strings.Replace(flipped(src, "p2"), "**Status:** in-progress", "**Status:** complete", 1)
	if got := f.committed("main", manifestRel); got != want {
		t.Errorf("committed manifest:\n%s\nwant:\n%s", got, want)
	}
	if live := f.read(f.top, manifestRel); live != want {
		t.Errorf("live manifest:\n%s\nwant:\n%s", live, want)
	}
	if got := f.gitIn(f.top, "log", "-1", "--format=%s", "main"); got != "Merge p2: second phase" {
		t.Errorf("subject = %q", got)
	}
}

// The flip (one function for the committed manifest and the live file)
// marks the manifest complete only when asked (Complete) and every phase
// is merged after it: Complete=false never does, even when every phase is
// merged.
func TestFlipCompletesOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	p1Merged := strings.Replace(manifestSrc, "[pending] **p1**", "[merged] **p1**", 1)
	for _, tc := range []struct {
		name, src, id string
		complete      bool
		want          string
	}{
		{"last phase, asked", p1Merged, "p2", true, "complete"},
		{"last phase, not asked", p1Merged, "p2", false, "in-progress"},
		{"a phase left, asked", manifestSrc, "p1", true, "in-progress"},
	} {
		j := job(tc.id, "phase", "")
		j.Complete = tc.complete
		b, err := land.Flip([]byte(tc.src), j)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := string(b); !strings.Contains(got, "[merged] **"+tc.id+"**") || !strings.Contains(got, "**Status:** "+tc.want+"\n") {
			t.Errorf("%s: flipped manifest:\n%s\nwant %s merged and status %s", tc.name, got, tc.id, tc.want)
		}
	}
}

// Complete=false never marks the manifest complete, end to end.
func TestMergeNotCompleteUnlessAsked(t *testing.T) {
	t.Parallel()
	if os.Getenv("CLAUDOPILOT_SOAK") != "1" {
		t.Skip("end to end only under CLAUDOPILOT_SOAK=1: TestFlipCompletesOnlyWhenAsked proves the flip (the committed and the live manifest's) leaves the status without Complete; TestMergeCompleteOnLastPhase lands a flip end to end")
	}
	src := strings.Replace(manifestSrc, "[pending] **p1**", "[merged] **p1**", 1)
	f := newFixture(t, src)
	_, tip := f.branch("p2", "p2-second.md", map[string]string{"api/x.go": "package api\n"})
	f.mustMerge(job("p2", "second phase", tip))
	if got := f.committed("main", manifestRel); !strings.Contains(got, "**Status:** in-progress") {
		t.Errorf("committed manifest:\n%s", got)
	}
}

func TestMergeDropsBranchManifestEdits(t *testing.T) {
	t.Parallel()
	tampered := strings.NewReplacer(
		"[pending] **p1**", "[failed] **p1**",
		"[pending] **p2**", "[merged] **p2**",
		"**Status:** in-progress", "**Status:** complete",
		"Some prose the driver keeps.", "The worker rewrote this.",
	).Replace(manifestSrc)
	for _, tc := range []struct {
		name     string
		baseEdit string // the base's own later edit of the manifest; "" = none
	}{
		{"tampered states", ""},
		{"conflicting edit", strings.Replace(manifestSrc, "Some prose the driver keeps.", "A human edited this on main.", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, manifestSrc)
			_, tip := f.branch("p1", "p1-first.md", map[string]string{manifestRel: tampered, "x.txt": "x\n"})
			want := manifestSrc
			if tc.baseEdit != "" {
				// Commit on main without disturbing the live file's
				// [running] token: commit the edit, then put it back.
				f.commitOn(f.top, "human edit", map[string]string{manifestRel: tc.baseEdit})
				f.write(f.top, manifestRel, strings.Replace(tc.baseEdit, "[pending] **p1**", "[running] **p1**", 1))
				want = tc.baseEdit
			}
			f.mustMerge(job("p1", "first phase", tip))
			if got := f.committed("main", manifestRel); got != flipped(want, "p1") {
				t.Errorf("committed manifest:\n%s\nwant the base's with the flip:\n%s", got, flipped(want, "p1"))
			}
			if got := f.read(f.top, "x.txt"); got != "x\n" {
				t.Errorf("x.txt = %q", got)
			}
			if live := f.read(f.top, manifestRel); live != flipped(want, "p1") {
				t.Errorf("live manifest:\n%s", live)
			}
		})
	}
}

func TestMergeConflict(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"README.md": "readme from p1\n"})
	base := f.commitOn(f.top, "human", map[string]string{"README.md": "readme from a human\n"})

	out := f.owner.Merge(f.ctx, job("p1", "first phase", tip))
	if out.Reason != state.ReasonConflict || out.Err != nil {
		t.Fatalf("outcome = %+v, want Reason conflict", out)
	}
	if !strings.Contains(out.Detail, "README.md") || !strings.Contains(out.Detail, "main") {
		t.Errorf("Detail = %q, want the path and the base", out.Detail)
	}
	f.refused(out, "p1", base)
	if got := f.read(f.top, "README.md"); got != "readme from a human\n" {
		t.Errorf("README.md = %q", got)
	}
}

func TestMergeConflictMarkersLeftIn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	wt, _ := f.branchOut("p1", "p1-first.md", map[string]string{"README.md": "readme from p1\n"})
	base := f.commitOn(f.top, "human", map[string]string{"README.md": "readme from a human\n"})
	// The worker merged the base and concluded the merge with the markers
	// still in.
	if _, err := f.git.GitIn(f.ctx, wt, "merge", "-q", "--no-edit", "main"); err == nil {
		t.Fatal("the merge of main into the branch did not conflict")
	}
	if !strings.Contains(f.read(wt, "README.md"), "<<<<<<<") {
		t.Fatal("no markers in README.md")
	}
	f.gitIn(wt, "commit", "-q", "-a", "--no-edit")
	tip := f.head(wt)

	out := f.owner.Merge(f.ctx, job("p1", "first phase", tip))
	if out.Reason != state.ReasonConflict || !strings.Contains(out.Detail, "conflict markers left in") || !strings.Contains(out.Detail, "README.md") {
		t.Fatalf("outcome = %+v, want Reason conflict naming README.md's markers", out)
	}
	f.refused(out, "p1", base)
}

// Whitespace errors that git diff --check also reports are not markers.
func TestMergeWhitespaceIsNotAMarker(t *testing.T) {
	t.Parallel()
	if os.Getenv("CLAUDOPILOT_SOAK") != "1" {
		t.Skip("end to end only under CLAUDOPILOT_SOAK=1: TestCheckLetsThrough/whitespace proves the landing's check lets it through")
	}
	f := newFixture(t, manifestSrc)
	_, tip := f.branch("p1", "p1-first.md", map[string]string{
		"notes.txt": "trailing   \n \tspace before tab\n\tmixed \t\n\n\n",
	})
	f.mustMerge(job("p1", "first phase", tip))
	if got := f.read(f.top, "notes.txt"); !strings.HasPrefix(got, "trailing   \n") {
		t.Errorf("notes.txt = %q", got)
	}
}

// A Markdown setext heading whose underline happens to be seven '=' is not
// a leftover conflict marker: no merge left it, and there is no <<<<<<< or
// >>>>>>> around it.
func TestMergeSetextHeadingIsNotAMarker(t *testing.T) {
	t.Parallel()
	if os.Getenv("CLAUDOPILOT_SOAK") != "1" {
		t.Skip("end to end only under CLAUDOPILOT_SOAK=1: TestCheckLetsThrough/setext_heading proves the landing's check lets it through")
	}
	f := newFixture(t, manifestSrc)
	_, tip := f.branch("p1", "p1-first.md", map[string]string{
		"docs/install.md": "Install\n=======\n\nRun it.\n",
	})
	out := f.owner.Merge(f.ctx, job("p1", "first phase", tip))
	if !out.OK {
		t.Errorf("Merge = %+v; a lone ======= line (a setext heading) was taken for a conflict marker", out)
	}
}

func TestMergeScope(t *testing.T) {
	t.Parallel()
	t.Run("outside", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, manifestSrc)
		base := f.rev("main")
		_, tip := f.branch("p2", "p2-second.md", map[string]string{
			"api/x.go":  "package api\n",
			"other.txt": "out of scope\n",
			manifestRel: strings.Replace(manifestSrc, "Some prose", "Edited prose", 1),
		})
		j := job("p2", "second phase (deps: p1) (owns: api/)", tip)
		j.Owns = []string{"api/"}
		out := f.owner.Merge(f.ctx, j)
		if out.Reason != state.ReasonScope || out.Err != nil {
			t.Fatalf("outcome = %+v, want Reason scope", out)
		}
		if !strings.Contains(out.Detail, "other.txt") {
			t.Errorf("Detail = %q, want other.txt named", out.Detail)
		}
		if strings.Contains(out.Detail, "roadmap/") || strings.Contains(out.Detail, "api/x.go") {
			t.Errorf("Detail = %q names in-scope paths, the doc or the manifest", out.Detail)
		}
		f.refused(out, "p2", base)
	})
	t.Run("inside", func(t *testing.T) {
		t.Parallel()
		if os.Getenv("CLAUDOPILOT_SOAK") != "1" {
			t.Skip("end to end only under CLAUDOPILOT_SOAK=1: TestCheckLetsThrough/in_scope proves the landing's check lets it through")
		}
		f := newFixture(t, manifestSrc)
		_, tip := f.branch("p2", "p2-second.md", map[string]string{
			"api/x.go":     "package api\n",
			"api/sub/y.go": "package sub\n",
			manifestRel:    strings.Replace(manifestSrc, "Some prose", "Edited prose", 1),
		})
		// The base changing files outside the scope is not the branch's
		// doing.
		f.commitOn(f.top, "human", map[string]string{"elsewhere.txt": "human\n"})
		j := job("p2", "second phase (deps: p1) (owns: api/)", tip)
		j.Owns = []string{"./api/"}
		f.mustMerge(j)
		if got := f.read(f.top, "api/sub/y.go"); got != "package sub\n" {
			t.Errorf("api/sub/y.go = %q", got)
		}
	})
}

// The landing's check (the protected-file, conflict-marker and scope
// checks on the branch's one diff) lets through what is neither a marker
// nor out of scope: whitespace errors git diff --check reports, a
// Markdown setext heading's ======= underline (no merge left it, no
// <<<<<<< or >>>>>>> around it), and, under (owns: ./api/), files below
// api/ with the phase's manifest edit and doc rename beside the base's
// own change outside the scope (not the branch's doing). Every branch
// of ONE repository in one import, a check each (a whole landing each
// was about 25 processes; those runs are under CLAUDOPILOT_SOAK=1).
func TestCheckLetsThrough(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	done := func(doc string) [][2]string {
		return [][2]string{{f.layout.DocRel(doc), f.layout.DocRel(roadmap.DonePrefix + doc)}}
	}
	cases := []struct {
		name, id string
		c        gittest.Commit
		owns     []string
	}{
		{"whitespace", "p1", gittest.Commit{Renames: done("p1-first.md"), Files: map[string]string{"notes.txt": "trailing   \n \tspace before tab\n\tmixed \t\n\n\n"}}, nil},
		{"setext heading", "p1", gittest.Commit{Renames: done("p1-first.md"), Files: map[string]string{"docs/install.md": "Install\n=======\n\nRun it.\n"}}, nil},
		{"in scope", "p2", gittest.Commit{Renames: done("p2-second.md"), Files: map[string]string{
			"api/x.go": "package api\n", "api/sub/y.go": "package sub\n",
			manifestRel: strings.Replace(manifestSrc, "Some prose", "Edited prose", 1),
		}}, []string{"./api/"}},
	}
	// The branches first: every From main^0 is main before the import.
	var commits []gittest.Commit
	for i, tc := range cases {
		tc.c.Ref, tc.c.From, tc.c.Message = fmt.Sprint("case/", i), "main^0", "work on "+tc.id
		commits = append(commits, tc.c)
	}
	commits = append(commits, gittest.Commit{Ref: "main", From: "main^0", Message: "human", Files: map[string]string{"elsewhere.txt": "human\n"}})
	tips := gittest.Import(t, f.env, f.top, commits...)
	base := tips[len(cases)]
	src := []byte(f.committed(base, manifestRel))
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := job(tc.id, "phase", tips[i])
			j.Owns = tc.owns
			if out, stop := land.Check(f.owner, f.ctx, j, base, tips[i], src); stop || out.Reason != "" || out.Err != nil {
				t.Errorf("stop %v, outcome %+v: the check stopped the landing", stop, out)
			}
		})
	}
}

func TestInScope(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path string
		owns []string
		want bool
	}{
		{"api/x.go", []string{"api/"}, true},
		{"api/a/b.go", []string{"api"}, true},
		{"api", []string{"api/"}, true},
		{"apix/y.go", []string{"api/"}, false},
		{"apix/y.go", []string{"api"}, false},
		{"pkg/x.go", []string{"api/", "pkg/x.go"}, true},
		{"pkg/x.go.orig", []string{"pkg/x.go"}, false},
		{"pkg/y.go", []string{"./pkg/"}, true},
		{"z.go", nil, false},
	} {
		if got := land.InScope(tc.path, tc.owns); got != tc.want {
			t.Errorf("InScope(%q, %q) = %v, want %v", tc.path, tc.owns, got, tc.want)
		}
	}
}

func TestMergeGateRedOnTheMergeCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	wt, tip := f.branchOut("p1", "p1-first.md", map[string]string{"branch.txt": "b\n"})
	base := f.commitOn(f.top, "human", map[string]string{"base.txt": "b\n"})
	j := job("p1", "first phase", tip)
	// Green on either side alone, red on their merge.
	j.Gate = "echo checking; if [ -f base.txt ] && [ -f branch.txt ]; then echo both present; exit 1; fi"

	out := f.owner.Merge(f.ctx, j)
	if out.Reason != state.ReasonGate || out.Err != nil {
		t.Fatalf("outcome = %+v, want Reason gate", out)
	}
	if !strings.Contains(out.Detail, "gate-1.log") {
		t.Errorf("Detail = %q, want the gate log", out.Detail)
	}
	if log := f.read(f.layout.LogDir("p1"), "gate-1.log"); !strings.Contains(log, "both present") {
		t.Errorf("gate log:\n%s", log)
	}
	f.refused(out, "p1", base)
	// The worktree is back on its branch, at its tip, clean.
	if head := f.gitIn(wt, "symbolic-ref", "HEAD"); head != "refs/heads/auto/p1" {
		t.Errorf("worktree HEAD = %s", head)
	}
	if h := f.head(wt); h != tip {
		t.Errorf("worktree at %s, want %s", h, tip)
	}
	if st := f.gitIn(wt, "status", "--porcelain"); st != "" {
		t.Errorf("worktree not clean:\n%s", st)
	}
}

func TestMergeGateRunsOncePerTree(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	count := filepath.Join(t.TempDir(), "gate-runs")
	gate := "echo run >> '" + count + "'"
	runs := func() int {
		b, err := os.ReadFile(count)
		if err != nil {
			return 0
		}
		return strings.Count(string(b), "run")
	}
	tips := f.branches(phase{"p1", "p1-first.md", map[string]string{"one.txt": "1\n"}}, phase{"p2", "p2-second.md", map[string]string{"api/two.go": "package api\n"}})
	tip1, tip2 := tips[0], tips[1]

	// A wait after the gate: the same merge tried again is not gated
	// again.
	f.write(f.top, "one.txt", "the user's\n")
	j1 := job("p1", "first phase", tip1)
	j1.Gate = gate
	if out := f.owner.Merge(f.ctx, j1); len(out.Wait) != 1 {
		t.Fatalf("outcome = %+v, want a wait", out)
	}
	os.Remove(filepath.Join(f.top, "one.txt"))
	f.mustMerge(j1)
	if n := runs(); n != 1 {
		t.Errorf("gate ran %d times for one merge tree, want 1", n)
	}
	// p2 was cut before p1 landed: its merge is a new tree.
	j2 := job("p2", "second phase", tip2)
	j2.Gate = gate
	f.mustMerge(j2)
	if n := runs(); n != 2 {
		t.Errorf("gate ran %d times after a merge with new base work, want 2", n)
	}
	if !exists(filepath.Join(f.top, "one.txt")) || !exists(filepath.Join(f.top, "api/two.go")) {
		t.Errorf("the checkout lacks the merged files")
	}
}

// A phase worktree that vanished (a resumed run that found the branch
// only) makes no difference: the merge gate runs in the gate worktree.
func TestMergeGateWithoutWorktree(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	wt, tip := f.branch("p1", "p1-first.md", map[string]string{"branch.txt": "b\n"})
	f.gitIn(f.top, "worktree", "remove", "--force", wt)
	base := f.commitOn(f.top, "human", map[string]string{"base.txt": "b\n"})
	j := job("p1", "first phase", tip)
	where := filepath.Join(t.TempDir(), "where")
	j.Gate = "test -f base.txt && test -f branch.txt && pwd > '" + where + "'"
	out := f.mustMerge(j)
	if b, err := os.ReadFile(where); err != nil || strings.TrimSpace(string(b)) != land.GateDir(f.layout) {
		t.Errorf("the gate did not run in the gate worktree: %q, %v", b, err)
	}
	if got := f.rev(out.Commit + "^1"); got != base {
		t.Errorf("first parent %s, want %s", got, base)
	}
	if f.branchExists("p1") {
		t.Errorf("branch not deleted")
	}
}

func TestMergeBaseMovedDuringGate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"branch.txt": "b\n"})
	f.commitOn(f.top, "human before", map[string]string{"base.txt": "b\n"})
	state := t.TempDir()
	count := filepath.Join(state, "count")
	// On its first run the gate plays a human committing on main.
	j := job("p1", "first phase", tip)
	j.Gate = "echo run >> '" + count + "'\n" +
		"if [ ! -e '" + state + "/moved' ]; then\n" +
		"  touch '" + state + "/moved'\n" +
		"  echo user > '" + f.top + "/user.txt'\n" +
		"  git -C '" + f.top + "' add user.txt && git -C '" + f.top + "' commit -q -m user || exit 9\n" +
		"fi\n"

	out := f.mustMerge(j)
	user := f.gitIn(f.top, "rev-parse", ":/^user")
	if got := f.gitIn(f.top, "rev-list", "--parents", "-n", "1", "main"); got != out.Commit+" "+user+" "+tip {
		t.Errorf("merge parents: %q, want (user commit %s, tip %s)", got, user, tip)
	}
	b, _ := os.ReadFile(count)
	if n := strings.Count(string(b), "run"); n != 2 {
		t.Errorf("gate ran %d times, want 2 (the merge rebuilt on the new tip is gated again)", n)
	}
	for _, p := range []string{"user.txt", "base.txt", "branch.txt"} {
		if _, ok, _ := f.git.ReadFile(f.ctx, "main", p); !ok {
			t.Errorf("main lacks %s", p)
		}
		if !exists(filepath.Join(f.top, p)) {
			t.Errorf("the checkout lacks %s", p)
		}
	}
	for _, l := range f.status() {
		if !strings.HasSuffix(l, manifestRel) {
			t.Errorf("git status after the merge: %q", l)
		}
	}
	if got := f.committed("main", manifestRel); got != flipped(manifestSrc, "p1") {
		t.Errorf("committed manifest:\n%s", got)
	}
}

func TestMergeWaitsForUncommittedChange(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	base := f.rev("main")
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"a.txt": "a from p1\n", "feature/new.txt": "p1's\n"})
	f.write(f.top, "a.txt", "a being edited by a human\n")

	out := f.owner.Merge(f.ctx, job("p1", "first phase", tip))
	if out.Err != nil || out.Reason != "" || !slices.Equal(out.Wait, []string{"a.txt"}) {
		t.Fatalf("outcome = %+v, want Wait [a.txt]", out)
	}
	f.refused(out, "p1", base)
	if got := f.read(f.top, "a.txt"); got != "a being edited by a human\n" {
		t.Errorf("a.txt = %q, the user's change was touched", got)
	}
	// An untracked file where the merge adds one blocks it too.
	f.write(f.top, "feature/new.txt", "the user's own\n")
	out = f.owner.Merge(f.ctx, job("p1", "first phase", tip))
	if !slices.Equal(out.Wait, []string{"a.txt", "feature/new.txt"}) {
		t.Fatalf("outcome = %+v, want Wait [a.txt feature/new.txt]", out)
	}
	f.refused(out, "p1", base)
	if got := f.read(f.top, "feature/new.txt"); got != "the user's own\n" {
		t.Errorf("feature/new.txt = %q", got)
	}
	// Once the changes are gone the merge goes through.
	f.gitIn(f.top, "checkout", "--", "a.txt")
	if err := os.RemoveAll(filepath.Join(f.top, "feature")); err != nil {
		t.Fatal(err)
	}
	f.mustMerge(job("p1", "first phase", tip))
	if got := f.read(f.top, "a.txt"); got != "a from p1\n" {
		t.Errorf("a.txt = %q after the merge", got)
	}
}

func TestMergeKeepsUnrelatedChangesAndLiveEdits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"a.txt": "a from p1\n", "c.txt": "c\n"})
	f.write(f.top, "b.txt", "b edited by a human\n")
	f.write(f.top, "notes.txt", "untracked notes\n")
	f.gitIn(f.top, "add", "b.txt") // staged, too
	f.write(f.top, "b.txt", "b edited by a human, twice\n")
	live := f.read(f.top, manifestRel) + "\nA human's note, added while the run goes on.\n\n- an unrelated list item\n"
	f.write(f.top, manifestRel, live)

	f.mustMerge(job("p1", "first phase", tip))
	if got := f.read(f.top, "b.txt"); got != "b edited by a human, twice\n" {
		t.Errorf("b.txt = %q", got)
	}
	if staged := f.gitIn(f.top, "show", ":b.txt"); staged != "b edited by a human" {
		t.Errorf("staged b.txt = %q", staged)
	}
	if got := f.read(f.top, "notes.txt"); got != "untracked notes\n" {
		t.Errorf("notes.txt = %q", got)
	}
	if got, want := f.read(f.top, manifestRel), strings.Replace(live, "[running] **p1**", "[merged] **p1**", 1); got != want {
		t.Errorf("live manifest:\n%s\nwant the human's edits with the flip:\n%s", got, want)
	}
	if got := f.committed("main", manifestRel); got != flipped(manifestSrc, "p1") {
		t.Errorf("committed manifest took the live edits:\n%s", got)
	}
	if got := f.read(f.top, "c.txt"); got != "c\n" {
		t.Errorf("c.txt = %q", got)
	}
	st := f.status()
	slices.Sort(st)
	// b.txt is staged and modified again: "MM".
	want := []string{" M " + manifestRel, "MM b.txt", "?? notes.txt"}
	slices.Sort(want)
	if !slices.Equal(st, want) {
		t.Errorf("git status = %q, want %q", st, want)
	}
}

// newLockfileFixture is newFixture with go.sum ("a v1") in the
// template's commit: a commit of its own was two processes in each of
// the four tests that use it, the template is made once (about six; a
// template for one or two tests costs more than their commits).
func newLockfileFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, manifestSrc, "roadmap", map[string]string{"go.sum": "a v1\n"})
}

func TestMergeLockfileOnlyConflict(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (*fixture, string, string) {
		f := newLockfileFixture(t)
		_, tip := f.branchOut("p1", "p1-first.md", map[string]string{"go.sum": "a v1\nc v1\n", "c.go": "package c\n"})
		base := f.commitOn(f.top, "human deps", map[string]string{"go.sum": "a v1\nb v1\n"})
		return f, tip, base
	}
	t.Run("regenerated", func(t *testing.T) {
		t.Parallel()
		f, tip, base := setup(t)
		f.owner.LockfileCmd = "printf 'regenerated\\n' > go.sum"
		out := f.mustMerge(job("p1", "first phase", tip))
		if got := f.committed("main", "go.sum"); got != "regenerated\n" {
			t.Errorf("go.sum on main = %q", got)
		}
		if got := f.rev(out.Commit + "^1"); got != base {
			t.Errorf("first parent %s, want the base %s", got, base)
		}
		// The second parent is the branch's own merge of the base, on top
		// of the gated tip.
		if got := f.rev(out.Commit + "^2^1"); got != tip {
			t.Errorf("the landed branch does not carry the gated tip: %s", got)
		}
		if !exists(filepath.Join(f.layout.LogDir("p1"), "lockfile-1.log")) {
			t.Errorf("no lockfile log")
		}
		if f.branchExists("p1") {
			t.Errorf("branch not deleted")
		}
		if got := f.read(f.top, "go.sum"); got != "regenerated\n" {
			t.Errorf("go.sum in the checkout = %q", got)
		}
	})
	t.Run("regeneration fails", func(t *testing.T) {
		t.Parallel()
		f, tip, base := setup(t)
		f.owner.LockfileCmd = "exit 3"
		out := f.owner.Merge(f.ctx, job("p1", "first phase", tip))
		if out.Reason != state.ReasonConflict || !strings.Contains(out.Detail, "go.sum") {
			t.Fatalf("outcome = %+v, want Reason conflict on go.sum", out)
		}
		f.refused(out, "p1", base)
		wt := f.layout.Worktree("p1")
		if _, err := f.git.GitIn(f.ctx, wt, "rev-parse", "-q", "--verify", "MERGE_HEAD"); err == nil {
			t.Errorf("the failed regeneration left a merge in progress")
		}
		if h := f.head(wt); h != tip {
			t.Errorf("branch moved to %s", h)
		}
	})
}

// DERIVED_CONFLICT_FILES names other derived files: a conflict on them
// alone is regenerated with LockfileCmd; a conflict beyond them is not.
func TestMergeDerivedConflictFiles(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T, branchFiles map[string]string) (*fixture, string, string) {
		f := newFixture(t, manifestSrc)
		f.commitOn(f.top, "gen", map[string]string{"gen/schema.json": "v1\n", "x.txt": "x\n"})
		_, tip := f.branchOut("p1", "p1-first.md", branchFiles)
		base := f.commitOn(f.top, "human gen", map[string]string{"gen/schema.json": "v1 human\n", "x.txt": "x human\n"})
		return f, tip, base
	}
	t.Run("only derived", func(t *testing.T) {
		t.Parallel()
		f, tip, _ := setup(t, map[string]string{"gen/schema.json": "v1 p1\n"})
		f.owner.Derived = regexp.MustCompile(`^gen/.*\.json$`)
		f.owner.LockfileCmd = "printf 'regenerated\\n' > schema.json"
		f.mustMerge(job("p1", "first phase", tip))
		if got := f.committed("main", "gen/schema.json"); got != "regenerated\n" {
			t.Errorf("gen/schema.json on main = %q", got)
		}
	})
	t.Run("beyond derived", func(t *testing.T) {
		t.Parallel()
		f, tip, base := setup(t, map[string]string{"gen/schema.json": "v1 p1\n", "x.txt": "x p1\n"})
		f.owner.Derived = regexp.MustCompile(`^gen/.*\.json$`)
		f.owner.LockfileCmd = "printf 'regenerated\\n' > schema.json"
		out := f.owner.Merge(f.ctx, job("p1", "first phase", tip))
		if out.Reason != state.ReasonConflict {
			t.Fatalf("outcome = %+v, want a conflict", out)
		}
		f.refused(out, "p1", base)
	})
}

// A merge that landed before a crash: the base's committed manifest says
// [merged] and contains the tip. Only the bookkeeping is left.
func TestMergeAlreadyLanded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	wt, tip := f.branch("p1", "p1-first.md", map[string]string{"one.txt": "1\n"})
	// Land it by hand, as the crashed driver did, leaving the live file
	// [running].
	live := f.read(f.top, manifestRel)
	f.gitIn(f.top, "merge", "-q", "--no-ff", "--no-commit", "auto/p1")
	f.write(f.top, manifestRel, flipped(manifestSrc, "p1"))
	f.gitIn(f.top, "add", manifestRel)
	f.gitIn(f.top, "commit", "-q", "-m", "Merge p1: first phase")
	f.write(f.top, manifestRel, live)
	landed := f.rev("main")

	out := f.mustMerge(job("p1", "first phase", tip))
	if out.Commit != landed || f.rev("main") != landed {
		t.Errorf("Commit = %s, main = %s, want no new commit (%s)", out.Commit, f.rev("main"), landed)
	}
	if got := f.read(f.top, manifestRel); got != flipped(manifestSrc, "p1") {
		t.Errorf("live manifest:\n%s", got)
	}
	if exists(wt) || f.branchExists("p1") {
		t.Errorf("worktree or branch left behind")
	}
}

// A branch contained in the base whose phase the base's manifest does not
// mark merged has not landed (a branch with no new commits is contained
// too): nothing is skipped.
func TestMergeContainedButNotLanded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"one.txt": "1\n"})
	f.gitIn(f.top, "merge", "-q", "--ff-only", "auto/p1")
	out := f.mustMerge(job("p1", "first phase", tip))
	if out.Commit == tip {
		t.Fatalf("no merge commit made")
	}
	if got := f.committed("main", manifestRel); got != flipped(manifestSrc, "p1") {
		t.Errorf("committed manifest:\n%s", got)
	}
}

func TestMergeMissingBase(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"one.txt": "1\n"})
	f.owner.Layout.Base = "nope"
	out := f.owner.Merge(f.ctx, job("p1", "first phase", tip))
	if out.Err == nil || out.OK {
		t.Errorf("outcome = %+v, want an error", out)
	}
}

// A conflict on the lockfile plus one on the manifest is still a
// lockfile-only conflict: the manifest is the driver's, whatever the branch
// did to it is dropped.
func TestMergeLockfileConflictWithManifestConflict(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	f.commitOn(f.top, "deps", map[string]string{"sub/go.sum": "a v1\n"})
	_, tip := f.branchOut("p1", "p1-first.md", map[string]string{
		"sub/go.sum": "a v1\nc v1\n",
		manifestRel:  strings.Replace(manifestSrc, "Some prose the driver keeps.", "The worker's prose.", 1),
	})
	human := strings.Replace(manifestSrc, "Some prose the driver keeps.", "A human's prose.", 1)
	f.commitOn(f.top, "human", map[string]string{"sub/go.sum": "a v1\nb v1\n", manifestRel: human})
	f.write(f.top, manifestRel, strings.Replace(human, "[pending] **p1**", "[running] **p1**", 1))
	where := filepath.Join(t.TempDir(), "where")
	f.owner.LockfileCmd = "pwd > '" + where + "'; printf 'regenerated\\n' > go.sum"

	out := f.owner.Merge(f.ctx, job("p1", "first phase", tip))
	if !out.OK {
		t.Fatalf("Merge = %+v, want OK: a manifest conflict must not stop the lockfile regeneration", out)
	}
	if got := f.committed("main", "sub/go.sum"); got != "regenerated\n" {
		t.Errorf("sub/go.sum on main = %q", got)
	}
	if b, _ := os.ReadFile(where); !strings.HasSuffix(strings.TrimSpace(string(b)), "/sub") {
		t.Errorf("LOCKFILE_CMD ran in %q, want the lockfile's folder", b)
	}
	if got := f.committed("main", manifestRel); got != flipped(human, "p1") {
		t.Errorf("committed manifest:\n%s\nwant the base's with the flip:\n%s", got, flipped(human, "p1"))
	}
}

// With the roadmap at the repository's top level (RoadmapRel "."), the doc
// rename and the manifest are still not out of scope: the landing's
// check lets through a branch that renames its doc, edits the manifest
// and writes in its scope (a check, not a whole landing: the scope check
// is the check's, and TestMergeProtectsDocsAtTheTopLevel lands from a
// top-level roadmap end to end).
func TestMergeScopeRoadmapAtTop(t *testing.T) {
	t.Parallel()
	f := newFixtureAt(t, manifestSrc, ".")
	base := f.rev("main")
	tip := f.hostileBranch("p2", "p2-second.md", add("api/x.go", "package api\n"), add("EXECUTION-MANIFEST.md", "edited by p2\n"))
	j := job("p2", "second phase", tip)
	j.Owns = []string{"api/", "work/"}
	if out, stop := land.Check(f.owner, f.ctx, j, base, tip, []byte(manifestSrc)); stop || out.Reason != "" || out.Err != nil {
		t.Fatalf("stop %v, outcome %+v; the phase doc's DONE_ rename or the manifest was taken for an out-of-scope change", stop, out)
	}
}

// The base's move deletes the branch it merged in the same ref
// transaction only where the branch still points at the tip merged: a
// branch that moved on during the merge gate (a process the agent left
// behind still committing) is kept, and the merge lands all the same.
func TestMergeKeepsABranchThatMovedOn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	wt, tip := f.branch("p1", "p1-first.md", map[string]string{"a.txt": "p1\n"})
	base := f.rev("main")
	j := job("p1", "first phase", tip)
	j.Gate = "git update-ref refs/heads/" + f.layout.Branch("p1") + " " + base
	f.mustMerge(j)
	if got := f.rev("refs/heads/auto/p1"); got != base {
		t.Errorf("the moved branch is at %s, want it kept at %s", got, base)
	}
	if exists(wt) {
		t.Errorf("worktree %s left", wt)
	}
	if got := f.committed("main", manifestRel); got != flipped(manifestSrc, "p1") {
		t.Errorf("committed manifest:\n%s", got)
	}
}

// A driver killed after the base's move took the branch, before the
// cleanup removed the worktree: the end-of-run sweep removes it.
func TestCleanupLandedRemovesAWorktreeWithoutBranch(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	wt, tip := f.branch("p1", "p1-first.md", map[string]string{"a.txt": "p1\n"})
	f.gitIn(f.top, "update-ref", "refs/heads/main", tip)
	f.gitIn(f.top, "update-ref", "-d", "refs/heads/auto/p1", tip)
	if err := f.owner.CleanupLanded(f.ctx, []string{"p1"}); err != nil {
		t.Fatal(err)
	}
	if exists(wt) {
		t.Errorf("p1's worktree %s is left", wt)
	}
	if list := f.gitIn(f.top, "worktree", "list", "--porcelain"); strings.Contains(list, wt) {
		t.Errorf("worktree still registered:\n%s", list)
	}
}

// CleanupLanded removes what a landed phase left (a background removal
// that failed), and never a branch the base does not contain.
func TestCleanupLandedSweepsWhatIsLeft(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	wt, tip := f.branch("p1", "p1-first.md", map[string]string{"a.txt": "p1\n"})
	// Landed by hand: the base contains the tip, the worktree and branch
	// are still there, as after a cleanup that lost a race for a lock.
	f.gitIn(f.top, "update-ref", "refs/heads/main", tip)
	_, tip2 := f.branch("p2", "p2-second.md", map[string]string{"b.txt": "p2\n"})
	f.owner.CleanupLanded(f.ctx, []string{"p1", "p2", "gone"})
	if exists(wt) {
		t.Errorf("p1's worktree %s is left", wt)
	}
	if out, _ := f.git.GitIn(f.ctx, f.top, "branch", "--list", "auto/p1"); strings.TrimSpace(out) != "" {
		t.Errorf("p1's branch is left: %q", out)
	}
	if got := f.rev("refs/heads/auto/p2"); got != tip2 {
		t.Errorf("p2's branch (not in the base) was touched: %s", got)
	}
}
