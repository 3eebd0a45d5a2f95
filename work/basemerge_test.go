package work_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
)

// killingFilter is a smudge filter (standing in for git-lfs) that, the
// first time it is run by a `git merge` for a file named *-2.dat, kills
// that git with SIGKILL, as the driver's death does to its git (Pdeathsig):
// the merge is cut off after writing some of the files and before the
// index and the commit.
const killingFilter = `#!/bin/sh
case "$GIT_REFLOG_ACTION:$1" in
merge*:*-2.dat)
  if mkdir "$KILLED" 2>/dev/null; then
    p=$PPID
    while [ "$p" -gt 1 ]; do
      if tr '\0' ' ' < /proc/$p/cmdline | grep -q '^git .*merge'; then kill -9 "$p"; break; fi
      p=$(cut -d' ' -f4 /proc/$p/stat)
    done
  fi;;
esac
exec cat
`

// filterRepo makes *.dat files go through the killing filter.
func (f *fixture) filterRepo() (killed string) {
	f.t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		f.t.Skip("no /proc")
	}
	script := filepath.Join(f.tmp, "filter.sh")
	if err := os.WriteFile(script, []byte(killingFilter), 0o755); err != nil {
		f.t.Fatal(err)
	}
	killed = filepath.Join(f.tmp, "killed")
	// Only a smudge filter: a clean filter `cat` (the identity, as no
	// clean filter is) was a process for every .dat file git add read.
	f.gitIn(f.top, "config", "filter.slow.smudge", "KILLED='"+killed+"' '"+script+"' %f")
	f.commitOn(f.top, "lfs-like files", map[string]string{".gitattributes": "*.dat filter=slow\n"})
	return killed
}

// Kill the driver while its `git merge` of the base into a phase worktree
// runs: the worktree is left with part of the merge applied, no
// MERGE_HEAD and git's index.lock. The next attempt sets it back to the
// branch tip and merges again: the agent's work (committed before the
// merge, uncommitted work included) and the whole base are on the branch,
// and nothing of the half merge was committed as the agent's. (Before,
// every later attempt failed with reason worktree: "Your local changes
// ... would be overwritten by merge".)
func TestRunRedoesABaseMergeCutOff(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	killed := f.filterRepo()
	kept := f.parkBranch(map[string]string{"kept.txt": "kept\n"}, true)
	f.write(f.wt(), "left.txt", "left uncommitted by the agent\n")
	base := f.commitOn(f.top, "the other phase", map[string]string{"b-1.dat": "one\n", "b-2.dat": "two\n", "b-3.dat": "three\n"})

	ran := filepath.Join(f.tmp, "ran")
	f.runner.Agent = f.agent(`echo >> '` + ran + `'` + "\n" + doneBody)
	j := job()
	j.Attempt, j.TakeBase = 2, true
	o := f.run(j)
	if _, err := os.Stat(killed); err != nil {
		t.Fatalf("the merge was not cut off: %+v", o)
	}
	if o.OK || exists(ran) {
		t.Fatalf("the attempt whose merge was killed went on: %+v", o)
	}
	if !exists(work.MergingMark(f.layout, "p1")) {
		t.Fatalf("no record of the cut-off merge")
	}

	// The driver restarted: the phase resumes with the same job.
	j.Attempt, j.Resume = 3, true
	o = f.run(j)
	if !o.OK {
		t.Fatalf("the resumed attempt = %+v, want OK", o)
	}
	if !strings.Contains(strings.Join(o.Warnings, "\n"), "cut off") {
		t.Errorf("warnings %q, want the redone merge told", o.Warnings)
	}
	for _, c := range []string{kept, base} {
		if ok, _ := f.git.IsAncestor(f.ctx, c, o.Tip); !ok {
			t.Errorf("%.12s is not on the branch", c)
		}
	}
	for p, want := range map[string]string{"left.txt": "left uncommitted by the agent\n", "b-1.dat": "one\n", "b-2.dat": "two\n", "b-3.dat": "three\n"} {
		if got, _, _ := f.git.ReadFile(f.ctx, o.Tip, p); string(got) != want {
			t.Errorf("%s on the branch = %q, want %q", p, got, want)
		}
	}
	// The agent's leftovers went in before the base, in a commit of
	// their own, not mixed with the merge's files.
	log := f.gitIn(f.top, "log", "--format=%s", "--name-only", "main..auto/p1")
	if !strings.Contains(log, "before merging") || strings.Contains(log, "left uncommitted by "+string(state.Worker)) {
		t.Errorf("branch log:\n%s", log)
	}
	for _, c := range strings.Fields(f.gitIn(f.top, "log", "--no-merges", "--format=%H", "main..auto/p1")) {
		if files := f.gitIn(f.top, "show", "--format=", "--name-only", c); strings.Contains(files, ".dat") {
			t.Errorf("commit %.12s took the half merge's files as the agent's: %s", c, files)
		}
	}
	if exists(work.MergingMark(f.layout, "p1")) {
		t.Errorf("the record of the merge is left")
	}
	if st := f.gitIn(f.wt(), "status", "--porcelain"); st != "" {
		t.Errorf("worktree not clean:\n%s", st)
	}
}
