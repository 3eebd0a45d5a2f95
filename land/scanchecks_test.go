package land_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/gittest"
	"github.com/claudopilot/claudopilot/land"
	"github.com/claudopilot/claudopilot/state"
)

// The landing's checks read what the merge changes on the base in the
// secret scan's log (issue 25 §1: no git diff of their own): a protected
// path, whatever its name (quoted by git, not ASCII, deleted, a link in a
// folder's place, a rename), conflict markers and a clean branch get the
// verdicts the branch's own diff gave (TestMergeRefusesProtectedFiles'
// "check" runs that one), and a landing refused for a protected file
// runs no git diff.
func TestChecksReadTheScansDiff(t *testing.T) {
	t.Parallel()
	f := newProtectFixture(t)
	base := f.rev("main")
	src := []byte(f.committed("main", manifestRel))
	cases := []struct {
		name    string
		changes []change
		reason  state.Reason
		want    string // in the detail
	}{
		{"settings file", []change{add("claudopilot.config", "SANDBOX=off\n")}, state.ReasonProtected, "claudopilot.config"},
		{"quoted name", []change{add("scripts/a\tb \"q\".sh", "x\n")}, state.ReasonProtected, "scripts/a\tb \"q\".sh"},
		{"not ASCII", []change{add("scripts/été.sh", "x\n")}, state.ReasonProtected, "scripts/été.sh"},
		{"gitmodules deleted", []change{rm(".gitmodules")}, state.ReasonProtected, ".gitmodules"},
		{"another phase's doc renamed", []change{mv("roadmap/p2-second.md", "roadmap/DONE_p2-second.md")}, state.ReasonProtected, "roadmap/p2-second.md"},
		{"prompt folder as a link", []change{rm("roadmap/prompts/keep.md"), link("roadmap/prompts", "../evil")}, state.ReasonProtected, "roadmap/prompts"},
		{"conflict markers", []change{add("work/m.txt", "<<<<<<< ours\na\n=======\nb\n>>>>>>> theirs\n")}, state.ReasonConflict, "work/m.txt"},
		{"its own work", nil, "", ""},
	}
	// Every case's branch, and its merge on the base, in one
	// gittest.Import (a merge-tree and a commit-tree a case before): the
	// branch is the base with the case's changes, so the merge's tree is
	// the base's with the same changes, its parents the base and the tip.
	commits := make([]gittest.Commit, 0, 2*len(cases))
	for i, tc := range cases {
		name := strings.ReplaceAll(tc.name, " ", "-")
		commits = append(commits, f.hostileCommit("scan/"+name, "p1", "p1-first.md", tc.changes...))
		m := f.hostileCommit("scanmerge/"+name, "p1", "p1-first.md", tc.changes...)
		m.Merge, m.Message = []string{fmt.Sprintf(":%d", 2*i+1)}, "merge" // the tip's mark
		commits = append(commits, m)
	}
	made := gittest.Import(t, f.env, f.top, commits...)
	for i, tc := range cases {
		tip, merge := made[2*i], made[2*i+1]
		if f.rev(merge+"^{tree}") != f.rev(tip+"^{tree}") || f.rev(merge+"^1") != base {
			t.Fatalf("%s: the imported merge is not the base merged with its branch", tc.name)
		}
		_, out, stop := land.ScanCheck(f.owner, f.ctx, job("p1", "first phase", tip), base, merge, src, true)
		if out.Err != nil || stop != (tc.reason != "") || out.Reason != tc.reason || !strings.Contains(out.Detail, tc.want) {
			t.Errorf("%s: stop %v, outcome %+v; want reason %q naming %q", tc.name, stop, out, tc.reason, tc.want)
		}
	}

	trace := filepath.Join(t.TempDir(), "trace")
	f.owner.Git = f.git.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	tip := f.hostileBranch("p1", "p1-first.md", add("claudopilot.config", "SANDBOX=off\n"))
	if out := f.owner.Merge(f.ctx, job("p1", "first phase", tip)); out.Reason != state.ReasonProtected {
		t.Fatalf("Merge = %+v, want reason protected", out)
	}
	for _, c := range gitCalls(t, trace) {
		if strings.Contains(c, " diff ") {
			t.Errorf("the checks ran a diff of their own: %s", c)
		}
	}
}
