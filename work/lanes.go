package work

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/claudopilot/claudopilot/atomicfile"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

// A phase's worktree and branch belong to the phase and outlive a lane
// change (LANE_<id>_FALLBACK relaunches on another lane), so neither
// can be named after a lane. Each launch on a lane is written down on
// them instead:
//
//   - the branch's description (branch.<branch>.description, as `git
//     branch --edit-description` keeps it) gets one line per launch,
//     "worker 2: lane codex"; the merge commit carries them as its
//     Claudopilot-Lanes trailer, so the base's history keeps them after
//     the branch is gone;
//   - the worktree's git admin folder holds LaneMarkFile, naming the lane
//     of the attempt running in it now (or of its last one), which status
//     and explain show.

// LaneMarkFile is the marker in a phase worktree's git admin folder.
const LaneMarkFile = "claudopilot-lane"

// LaneLine is one launch as the branch description records it.
func LaneLine(role state.Role, attempt int, lane string) string {
	return fmt.Sprintf("%s %d: lane %s", role, attempt, lane)
}

var laneLineRE = regexp.MustCompile(`^(worker|supervisor|reviewer) ([0-9]+): lane ([A-Za-z][A-Za-z0-9_-]*)$`)

// LanesTrailer turns a branch description into the merge commit's
// trailer value, "worker 1 claude; worker 1 codex", in launch order; ""
// when it records no launch. Only lines of LaneLine's form count: the
// description is the repository's config, which a person (or an agent)
// may have written anything into.
func LanesTrailer(desc string) string {
	var parts []string
	for l := range strings.SplitSeq(desc, "\n") {
		if m := laneLineRE.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			parts = append(parts, m[1]+" "+m[2]+" "+m[3])
		}
	}
	return strings.Join(parts, "; ")
}

// recordLane writes down that attempt j starts on its lane, in the branch
// description and the worktree's marker. It is a record, not a check: a
// failure is a warning and the attempt goes on.
func (r *Runner) recordLane(ctx context.Context, j scheduler.Job, wt, branch string) error {
	if j.Lane == "" {
		return nil // no LANES: one implicit lane, nothing to tell apart
	}
	gd, err := OwnGitDir(ctx, r.Git, wt)
	if err != nil {
		return err
	}
	mark := fmt.Sprintf("%s %d %s\n", j.Role, j.Attempt, j.Lane)
	if err := atomicfile.Write(filepath.Join(gd, LaneMarkFile), []byte(mark), 0o644); err != nil {
		return fmt.Errorf("lane marker: %w", err)
	}
	return r.Git.AppendBranchDescription(ctx, branch, LaneLine(j.Role, j.Attempt, j.Lane))
}

// LaneMark is what a worktree's marker says: the attempt running in it
// now, or the last one that ran there.
type LaneMark struct {
	Role    string `json:"role"`
	Attempt int    `json:"attempt"`
	Lane    string `json:"lane"`
}

// WorktreeLane reads the lane marker of the worktree at wt without running
// git (status reads it for every phase). ok is false when there is no
// worktree or no marker.
func WorktreeLane(wt string) (m LaneMark, ok bool) {
	link, err := os.ReadFile(filepath.Join(wt, ".git"))
	if err != nil {
		return m, false
	}
	gd, found := strings.CutPrefix(strings.TrimSpace(string(link)), "gitdir:")
	if !found {
		return m, false
	}
	gd = strings.TrimSpace(gd)
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(wt, gd)
	}
	b, err := os.ReadFile(filepath.Join(gd, LaneMarkFile))
	if err != nil {
		return m, false
	}
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return m, false
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		return m, false
	}
	return LaneMark{Role: f[0], Attempt: n, Lane: f[2]}, true
}
