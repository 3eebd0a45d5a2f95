package land_test

import (
	"strings"
	"testing"
)

// The manifest belongs to the driver (issue 5): whatever a hostile branch
// does to it (deletes it; flips a merged phase back to pending, adds a
// line and sets the Status) the merge commit carries
// the base's manifest with only its own phase flipped, and so does the live
// file, so the scheduler still runs a phase a branch lied about. With
// TestMergeDropsBranchManifestEdits (flipped states, an edit that conflicts
// with the base's) this is what the script safe_hostile_manifest runs
// through the driver under CLAUDOPILOT_SOAK=1.
func TestMergeDropsHostileManifests(t *testing.T) {
	t.Parallel()
	p1Merged := strings.Replace(manifestSrc, "[pending] **p1**", "[merged] **p1**", 1)
	for _, tc := range []struct {
		name, src, id, doc string
		tamper             func(string) string // "" deletes the manifest
	}{
		{"deleted", manifestSrc, "p1", "p1-first.md", func(string) string { return "" }},
		{"lines edited and added", p1Merged, "p2", "p2-second.md", func(s string) string {
			s = strings.Replace(s, "[merged] **p1**", "[pending] **p1**", 1)
			return strings.Replace(s, "**Status:** in-progress", "**Status:** complete", 1) + "3. [merged] **HOSTILE** — planted (deps: none)\n"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tc.src)
			// The work and the tampering in the branch's one imported
			// commit (an rm or add, a commit and a rev-parse more before).
			c := f.hostileCommit(f.layout.Branch(tc.id), tc.id, tc.doc)
			c.Files["x.txt"] = "x\n"
			if m := tc.tamper(tc.src); m == "" {
				c.Delete = []string{manifestRel}
			} else {
				c.Files[manifestRel] = m
			}
			_, tip := f.branchCommit(tc.id, c, false)
			f.mustMerge(job(tc.id, "a phase", tip))
			want := flipped(tc.src, tc.id)
			if got := f.committed("main", manifestRel); got != want {
				t.Errorf("committed manifest:\n%s\nwant the base's with the flip:\n%s", got, want)
			}
			if live := f.read(f.top, manifestRel); live != want {
				t.Errorf("live manifest:\n%s\nwant:\n%s", live, want)
			}
			if got := f.read(f.top, "x.txt"); got != "x\n" {
				t.Errorf("x.txt = %q: the phase's own work did not land", got)
			}
		})
	}
}
