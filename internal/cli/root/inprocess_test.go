package root

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/internal/gittest"
)

// repoFixture is a throwaway git repository on branch main with files
// committed as "init", for the commands run in process (Run) below: the
// properties the scripts doctor_leftovers and run_checks_first proved with
// a driver start per command (#23).
type repoFixture struct {
	t   *testing.T
	dir string
	env []string
}

func newRepoFixture(t *testing.T, files map[string]string) *repoFixture {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		// git 2.38+ is a stated requirement (README; .ci/run installs it):
		// without it only this machine is unfit, as for the other git tests.
		t.Skip("no git")
	}
	top := t.TempDir()
	dir := filepath.Join(top, "repo")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + top, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x", "SANDBOX=off", "LC_ALL=C"}
	for rel, text := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := &repoFixture{t: t, dir: dir, env: env}
	r.sh("git init -q -b main && git add -A && git commit -qm init")
	return r
}

// sh runs script with sh in the repository; it must succeed.
func (r *repoFixture) sh(script string) string {
	r.t.Helper()
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir, cmd.Env = r.dir, r.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("sh %q: %v\n%s", script, err, out)
	}
	return string(out)
}

// lock writes the run lock as a run with pid writes it, on this host.
func (r *repoFixture) lock(pid int) {
	r.t.Helper()
	host, err := os.Hostname()
	if err != nil {
		r.t.Fatal(err)
	}
	text := fmt.Sprintf(`{"pid":%d,"host":%q,"time":"2020-01-01T00:00:00Z"}`, pid, host)
	if err := os.WriteFile(filepath.Join(r.dir, ".git", "claudopilot.lock"), []byte(text), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// run runs claudopilot args in process in dir (the process's working
// folder: these tests are not parallel) and returns stdout, stderr and
// the exit code main would give.
func (r *repoFixture) run(dir string, args ...string) (stdout, stderr string, code int) {
	r.t.Helper()
	return r.runIn(dir, "", args...)
}

// runIn is run with stdin.
func (r *repoFixture) runIn(dir, stdin string, args ...string) (stdout, stderr string, code int) {
	r.t.Helper()
	r.t.Chdir(dir)
	var out, errb bytes.Buffer
	err := Run(context.Background(), args, &cmdutil.Streams{In: strings.NewReader(stdin), Out: &out, Err: &errb}, r.env)
	code = cmdutil.Exit(&errb, err, nil) // as main prints it
	return out.String(), errb.String(), code
}

// okAgent writes an agent that renames its phase's doc to DONE_ and
// commits, outside the repository, and returns its path.
func (r *repoFixture) okAgent() string {
	r.t.Helper()
	agent := filepath.Join(filepath.Dir(r.dir), "ok.sh")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\nset -e\ndoc=$CLAUDOPILOT_PHASE_DOC\ngit mv \"$doc\" \"${doc%/*}/DONE_${doc##*/}\"\ngit commit -qm done\n"), 0o755); err != nil {
		r.t.Fatal(err)
	}
	return agent
}

// match fails unless every pattern matches text (multi-line mode).
func match(t *testing.T, what, text string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile("(?m)" + p).MatchString(text) {
			t.Errorf("%s does not match %q:\n%s", what, p, text)
		}
	}
}

// TestDoctorLeftovers: doctor warns, without failing, about a stale lock
// and about worktrees left over under .claudopilot/worktrees (of a merged
// phase, of a phase gone from the manifest, registered with its folder
// gone, a merged phase's with work not on main), each with its fix;
// parked and pending phases' worktrees are not leftovers. A live lock is
// no problem, and after clean all is well. The script doctor_leftovers
// proved this with three driver starts; it runs under CLAUDOPILOT_SOAK=1.
func TestDoctorLeftovers(t *testing.T) {
	r := newRepoFixture(t, map[string]string{
		"roadmap/EXECUTION-MANIFEST.md": "**Gate:** sh check.sh\n\n" +
			"1. [merged] **phase-01** — one (deps: none)\n2. [blocked] **phase-02** — two (deps: phase-01)\n" +
			"3. [pending] **phase-03** — three (deps: phase-01)\n4. [merged] **phase-04** — four (deps: none)\n" +
			"6. [merged] **phase-06** — six (deps: none)\n",
		"roadmap/DONE_phase-01.md": "", "roadmap/phase-02.md": "", "roadmap/phase-03.md": "",
		"roadmap/DONE_phase-04.md": "", "roadmap/DONE_phase-06.md": "", "check.sh": "exit 0\n",
	})
	// The six branches in one update-ref, each worktree by
	// gittest.Worktree (a git worktree add -b was 4 processes).
	ids := []string{"phase-01", "phase-02", "phase-03", "phase-04", "phase-06", "gone-phase"}
	r.sh(`echo /.claudopilot/ >> .git/info/exclude
for p in ` + strings.Join(ids, " ") + `; do echo "create refs/heads/auto/$p main"; done | git update-ref --stdin`)
	for _, id := range ids {
		gittest.Worktree(t, r.env, r.dir, filepath.Join(r.dir, ".claudopilot", "worktrees", id), "auto/"+id)
	}
	r.sh(`w=.claudopilot/worktrees
rm -rf $w/phase-04
git -C $w/phase-06 commit -q --allow-empty -m 'after the merge'`)
	r.lock(2147483000)
	doctor := []string{"doctor", "--agent", "sh", "--base", "main"}
	out, errs, code := r.run(r.dir, doctor...)
	if code != 0 {
		t.Fatalf("doctor: exit %d, want 0 (warnings only)\n%s%s", code, out, errs)
	}
	match(t, "doctor", out,
		`^warn lock: \.git/claudopilot\.lock is stale \(pid 2147483000 on .* is gone\); fix: claudopilot clean$`,
		`^warn worktree \.claudopilot/worktrees/phase-01 is left over: phase-01 is merged; fix: claudopilot clean$`,
		`^warn worktree \.claudopilot/worktrees/phase-04 is registered but its folder is gone; fix: claudopilot clean$`,
		`^warn worktree \.claudopilot/worktrees/gone-phase is left over: phase gone-phase is not in the manifest; fix: claudopilot clean$`,
		`^warn worktree \.claudopilot/worktrees/phase-06 is left over: phase-06 is merged; fix: its work is not on main: merge it, or remove it by hand`,
		`^no blocking problems \(5 warnings\)$`)
	if regexp.MustCompile(`phase-0[23]|(?m)^FAIL`).MatchString(out) {
		t.Errorf("doctor named a parked or pending phase's worktree, or failed:\n%s", out)
	}

	if _, errs, code := r.run(r.dir, "clean"); code != 0 {
		t.Fatalf("clean: exit %d\n%s", code, errs)
	}
	r.sh("git worktree remove --force .claudopilot/worktrees/phase-06 && git branch -D auto/phase-06")
	r.lock(1) // pid 1 is alive: a live run's lock
	out, errs, code = r.run(r.dir, doctor...)
	if code != 0 {
		t.Fatalf("doctor after clean: exit %d\n%s%s", code, out, errs)
	}
	match(t, "doctor after clean", out, `^ok   lock: a run is going on \(pid 1 on `, `^ok   worktrees: nothing left over$`, `^no problems found$`)
}

// TestRunChecksFirst: run checks before it changes anything and exits
// with the README's code: outside a repository 1; an agent or supervisor
// not found 1 with doctor's words, with no attempt, no log, the manifest
// still [pending] and the repository as it was; a roadmap folder that does
// not exist, or a file given as one, 3. The script run_checks_first proved
// this with six driver starts; it runs under CLAUDOPILOT_SOAK=1. Its one
// run (the manifest's path names its folder, --keep-going 1 is a value) is
// the last case here, in process.
func TestRunChecksFirst(t *testing.T) {
	r := newRepoFixture(t, map[string]string{
		"roadmap/EXECUTION-MANIFEST.md": "1. [pending] **phase-01** — one (deps: none)\n",
		"roadmap/phase-01.md":           "# phase-01\n",
	})
	outside := t.TempDir()
	_, errs, code := r.run(outside, "run")
	if code != 1 || strings.Contains(errs, "stat ") {
		t.Errorf("run outside a repository: exit %d, want 1 without a stat error\n%s", code, errs)
	}
	agent := r.okAgent()
	before := r.sh("git status --porcelain --ignored; git for-each-ref; git worktree list --porcelain")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--base", "main", "--agent", "no-such-agent -p"}, 1,
			`(?:^|claudopilot: )agent: no-such-agent -p \(from --agent\): no-such-agent not found; fix: install it \(and log in\), or set AGENT_CMD`},
		{[]string{"run", "--base", "main", "--agent", agent, "--supervisor", "FOO=1 no-such-supervisor"}, 1,
			`(?:^|claudopilot: )supervisor: FOO=1 no-such-supervisor \(from --supervisor\): no-such-supervisor not found; fix: install it \(and log in\), or set SUPERVISOR_CMD`},
		{[]string{"run", "nonexist", "--base", "main", "--agent", agent}, 3,
			`(?:^|claudopilot: )nonexist: roadmap folder not found: pass the folder that holds EXECUTION-MANIFEST.md, or make one with claudopilot init$`},
		{[]string{"run", "roadmap/phase-01.md", "--base", "main", "--agent", agent}, 3, `not a roadmap folder but a file`},
	} {
		out, errs, code := r.run(r.dir, c.args...)
		if code != c.code {
			t.Errorf("claudopilot %q: exit %d, want %d\n%s%s", c.args, code, c.code, out, errs)
		}
		match(t, fmt.Sprintf("claudopilot %q", c.args), errs+out, c.want)
	}
	if after := r.sh("git status --porcelain --ignored; git for-each-ref; git worktree list --porcelain"); after != before {
		t.Errorf("the refused runs changed the repository:\n%s\nwas\n%s", after, before)
	}
	if _, err := os.Stat(filepath.Join(r.dir, ".claudopilot", "logs")); err == nil {
		t.Error("a refused run wrote logs")
	}

	out, errs, code := r.run(r.dir, "run", "roadmap/EXECUTION-MANIFEST.md", "--keep-going", "1", "--base", "main", "--agent", agent, "--poll-seconds", "1")
	if code != 0 {
		t.Fatalf("run of the manifest's path: exit %d\n%s%s", code, out, errs)
	}
	match(t, "run of the manifest's path", out, `^1 merged, 0 blocked in `)
}

// TestDoctorBaseCheckout: doctor and status tell about the base checkout:
// a move after a merge that did not finish (advance.json left, the base
// ref already moved), which the next run finishes first; and uncommitted
// changes a merge may have to wait for. The script doctor_base_checkout
// proved this with eight driver starts; it runs under CLAUDOPILOT_SOAK=1.
func TestDoctorBaseCheckout(t *testing.T) {
	r := newRepoFixture(t, map[string]string{
		"claudopilot.config": "BASE_BRANCH=main\n",
		"notes.txt":          "notes\n",
		"roadmap/EXECUTION-MANIFEST.md": "# Execution Manifest: base checkout\n\n**Status:** in-progress\n\n## Phases\n\n" +
			"1. [merged] **phase-01** — first (deps: none)\n",
		"roadmap/DONE_phase-01.md": "# phase-01\n",
	})
	agent := r.okAgent()
	doctor := []string{"doctor", "--agent", agent}
	out, errs, code := r.run(r.dir, doctor...)
	if code != 0 {
		t.Fatalf("doctor: exit %d\n%s%s", code, out, errs)
	}
	match(t, "doctor", out, `^ok   base checkout .* is clean$`)

	// A merge moved main, and the checkout did not follow yet.
	// side's commit by one fast-import (two checkouts, an add, a commit
	// and two rev-parse were 6 processes).
	old, ok := gittest.Head(r.dir)
	if !ok {
		t.Fatal("main's commit is not in the ref files")
	}
	side := gittest.Import(t, r.env, r.dir, gittest.Commit{Ref: "side", From: "main^0", Message: "side", Files: map[string]string{"side.txt": "side\n"}})[0]
	r.sh(`mkdir -p .claudopilot/state
printf '{"ref":"refs/heads/main","dir":"%s","old":"%s","new":"%s"}' "$PWD" ` + old + " " + side + ` > .claudopilot/state/advance.json
git update-ref refs/heads/main ` + side + " " + old)
	out, _, _ = r.run(r.dir, doctor...)
	match(t, "doctor with a move pending", out,
		"^warn base checkout .* has not followed main to [0-9a-f]{12} yet: a merge's move of it is pending;", "the next `claudopilot run`")
	out, _, _ = r.run(r.dir, "status")
	match(t, "status", out, `^Base checkout: .* has not followed the base to [0-9a-f]{12} yet`)
	out, _, _ = r.run(r.dir, "status", "--json")
	match(t, "status --json", out, `"pending_checkout_move"`)

	// The next run finishes the move first, and then there is nothing to say.
	if out, errs, code := r.run(r.dir, "run", "roadmap", "--base", "main", "--agent", agent); code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	out, _, _ = r.run(r.dir, doctor...)
	if strings.Contains(out, "has not followed") {
		t.Errorf("doctor after the run still sees the move pending:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(r.dir, "side.txt")); err != nil || string(b) != "side\n" {
		t.Errorf("side.txt after the run: %q, %v; want the moved checkout's", b, err)
	}

	// A human's uncommitted change is named, with what it holds back.
	r.sh("echo edited >> notes.txt")
	out, _, _ = r.run(r.dir, doctor...)
	match(t, "doctor with an edit", out, `^warn base checkout .* has uncommitted changes: notes\.txt;`, `a merge that changes these files waits`)
}

// TestCleanParked: clean --parked asks first and anything but y keeps the
// parked branches; --parked --dry-run does not ask and says what it would
// remove; --parked is refused while a live run holds the lock, and clean
// without it goes on beside a live run and keeps its lock; y removes the
// parked worktree with its uncommitted changes and the branches; --yes
// does not ask. The script clean keeps the dry run and the clean end to
// end; these steps left it (CLAUDOPILOT_SOAK=1 runs them there too).
func TestCleanParked(t *testing.T) {
	r := newRepoFixture(t, map[string]string{
		"roadmap/EXECUTION-MANIFEST.md": "1. [merged] **phase-01** — one (deps: none)\n2. [blocked] **phase-02** — two (deps: phase-01)\n" +
			"3. [pending] **phase-03** — three (deps: phase-01)\n7. [failed] **phase-07** — seven (deps: none)\n",
	})
	// The three branches in one update-ref, the two worktrees by
	// gittest.Worktree (a git worktree add -b was 4 processes).
	r.sh(`echo /.claudopilot/ >> .git/info/exclude
printf 'create refs/heads/auto/phase-0%s main\n' 2 3 7 | git update-ref --stdin`)
	for _, id := range []string{"phase-02", "phase-03"} {
		gittest.Worktree(t, r.env, r.dir, filepath.Join(r.dir, ".claudopilot", "worktrees", id), "auto/"+id)
	}
	r.sh(`w=.claudopilot/worktrees
echo work > $w/phase-02/work.txt
git -C $w/phase-02 add work.txt
git -C $w/phase-02 commit -q -m 'phase-02: work'
echo more > $w/phase-02/more.txt`)
	branches := func() string {
		return r.sh("git branch --list 'auto/*' --format '%(refname:short)'")
	}
	all := "auto/phase-02\nauto/phase-03\nauto/phase-07\n"

	out, errs, code := r.runIn(r.dir, "n\n", "clean", "--parked")
	match(t, "clean --parked, n", errs, `^  auto/phase-02: phase-02 is \[blocked\] \(1 commit not on main\)$`,
		`remove 2 parked branches with their unmerged work\? \[y/N\] $`)
	match(t, "clean --parked, n", out, `^kept auto/phase-02: phase-02 is \[blocked\] \(not confirmed\)$`)
	if code != 0 || branches() != all {
		t.Errorf("clean --parked, n: exit %d, branches %q; want 0 and all kept", code, branches())
	}

	out, errs, _ = r.run(r.dir, "clean", "--parked", "--dry-run")
	if errs != "" {
		t.Errorf("clean --parked --dry-run wrote to stderr (asked?): %q", errs)
	}
	match(t, "clean --parked --dry-run", out,
		`^would remove worktree \.claudopilot/worktrees/phase-02 \(phase-02 is \[blocked\], with 1 file of uncommitted changes\)$`,
		`^would delete branch auto/phase-07 `)
	if branches() != all {
		t.Errorf("--dry-run removed branches: %q", branches())
	}

	r.lock(1) // pid 1 is alive: a live run's lock
	_, errs, code = r.run(r.dir, "clean", "--parked", "--yes")
	if code != 1 || branches() != all {
		t.Errorf("clean --parked --yes beside a live run: exit %d, branches %q; want 1 and all kept", code, branches())
	}
	match(t, "clean --parked beside a live run", errs, `a run is going on \(pid 1 on .*\): stop it before clean --parked`)
	out, _, code = r.run(r.dir, "clean")
	match(t, "clean beside a live run", out, `^nothing removed$`)
	if _, err := os.Stat(filepath.Join(r.dir, ".git", "claudopilot.lock")); code != 0 || err != nil {
		t.Errorf("clean beside a live run: exit %d, lock %v; want 0 and the lock kept", code, err)
	}
	if err := os.Remove(filepath.Join(r.dir, ".git", "claudopilot.lock")); err != nil {
		t.Fatal(err)
	}

	out, _, code = r.runIn(r.dir, "y\n", "clean", "--parked")
	match(t, "clean --parked, y", out,
		`^removed worktree \.claudopilot/worktrees/phase-02 \(phase-02 is \[blocked\], with 1 file of uncommitted changes\)$`,
		`^deleted branch auto/phase-02 \(phase-02 is \[blocked\]; 1 commit not on main\)$`,
		`^deleted branch auto/phase-07 \(phase-07 is \[failed\]; 0 commits not on main\)$`)
	if _, err := os.Stat(filepath.Join(r.dir, ".claudopilot", "worktrees", "phase-03")); code != 0 || err != nil || branches() != "auto/phase-03\n" {
		t.Errorf("clean --parked, y: exit %d, phase-03's worktree %v, branches %q", code, err, branches())
	}

	r.sh("git branch auto/phase-07 main")
	out, errs, code = r.run(r.dir, "clean", "--parked", "--yes")
	if errs != "" || code != 0 || branches() != "auto/phase-03\n" {
		t.Errorf("clean --parked --yes: exit %d, stderr %q, branches %q", code, errs, branches())
	}
	match(t, "clean --parked --yes", out, `^deleted branch auto/phase-07 `)
}

// TestCommandOpensItsRepositoryOnce: a command asks git where its
// repository is once, though it looks from the current folder and from the
// roadmap folder (cmdutil.App.OpenRepo; each was a git process, issue 23).
// From a subfolder: the same work tree, found without git.
func TestCommandOpensItsRepositoryOnce(t *testing.T) {
	r := newRepoFixture(t, map[string]string{
		"roadmap/EXECUTION-MANIFEST.md": "1. [pending] **phase-01** — one (deps: none)\n",
		"roadmap/phase-01.md":           "# phase-01\n",
		"sub/keep":                      "",
	})
	trace := filepath.Join(t.TempDir(), "trace")
	r.env = append(r.env, "GIT_TRACE="+trace)
	for _, c := range []struct {
		dir  string
		args []string
	}{
		{r.dir, []string{"status"}},
		{filepath.Join(r.dir, "sub"), []string{"plan"}},
		{r.dir, []string{"doctor", "--agent", "sh", "--base", "main"}},
	} {
		if err := os.WriteFile(trace, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, errs, code := r.run(c.dir, c.args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", c.args, code, out, errs)
		}
		b, err := os.ReadFile(trace)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "rev-parse --is-inside-work-tree"); n != 1 {
			t.Errorf("%v opened its repository %d times, want 1:\n%s", c.args, n, b)
		}
	}
}
