package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/claudopilot/claudopilot/issues"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// OutsideRetryError is a retry of a node from outside the manifest (an
// issue, "#12"): no manifest line holds its state, so retry cannot flip it.
// Its state is kept on GitHub, in its labels: that is where it is retried.
type OutsideRetryError struct{ ID string }

func (e *OutsideRetryError) Error() string {
	return fmt.Sprintf("retry: %s is an issue, not a phase of the manifest: it is retried on GitHub, by its labels", e.ID)
}

// IssueRetry reaches the queue's issues on GitHub, for retry '#N': the
// client and the labels the queue resolves (docs/queue.md).
type IssueRetry struct {
	GitHub *issues.GitHub
	Labels issues.Labels
}

// RetryOptions are what a retry takes besides its ids.
type RetryOptions struct {
	// All retries every [blocked] phase too.
	All bool
	// Issues reaches GitHub when an id is an issue ("#12"); it is called
	// only then, so a retry of phases needs no token. Nil: an issue is
	// *OutsideRetryError.
	Issues func(ctx context.Context) (*IssueRetry, error)
}

// Retried is what a retry did: phases flipped back to [pending], phases
// already [pending], and issues queued again on GitHub.
type Retried struct {
	Done, Already, Issues []string
}

// Retry flips ids (and, with All, every [blocked] phase) back to
// [pending], with the dependents parked only because they waited on one of
// them, and queues the issues among ids ("#12") again on GitHub
// (issues.Requeue). Everything is checked before anything changes: a phase
// that cannot be retried, a missing token or repository, an issue that is
// not blocked change nothing, not the other ids either (except an issue
// queued before a later one's GitHub answer failed). The command and the
// web page's retry button both use it.
func Retry(ctx context.Context, dir string, ids []string, o RetryOptions) (Retried, error) {
	var res Retried
	var phases, issueIDs []string
	for _, id := range ids {
		if roadmap.IsIssueRef(id) {
			issueIDs = append(issueIDs, id)
		} else {
			phases = append(phases, id)
		}
	}
	// A queue alone has no roadmap: retrying its issues needs none.
	var f *roadmap.File
	var want []*roadmap.Node
	if len(phases) > 0 || o.All || !noManifest(dir) {
		var err error
		if f, want, res.Already, err = retryPlan(ctx, dir, phases, o.All); err != nil {
			return Retried{}, err
		}
	}
	if len(issueIDs) > 0 {
		if o.Issues == nil {
			return Retried{}, &OutsideRetryError{ID: issueIDs[0]}
		}
		ir, err := o.Issues(ctx)
		if err != nil {
			return Retried{}, err
		}
		if err := requeueIssues(ctx, ir, issueIDs); err != nil {
			return Retried{}, err
		}
		res.Issues = issueIDs
	}
	for _, n := range want {
		if err := f.SetState(n.ID, manifest.Pending); err != nil {
			return res, err
		}
		res.Done = append(res.Done, n.ID)
	}
	return res, nil
}

// noManifest: dir holds no manifest at all.
func noManifest(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, roadmap.ManifestName))
	return errors.Is(err, fs.ErrNotExist)
}

// requeueIssues checks every issue is blocked (reads only), then queues
// them again.
func requeueIssues(ctx context.Context, ir *IssueRetry, ids []string) error {
	nums := make([]int, len(ids))
	for i, id := range ids {
		n, err := strconv.Atoi(strings.TrimPrefix(id, "#"))
		if err != nil {
			return fmt.Errorf("retry: %s: not an issue number", id)
		}
		nums[i] = n
	}
	for _, n := range nums {
		if err := issues.CheckBlocked(ctx, ir.GitHub, ir.Labels, n); err != nil {
			return fmt.Errorf("retry: %w", err)
		}
	}
	for _, n := range nums {
		if err := issues.Requeue(ctx, ir.GitHub, ir.Labels, n, "`claudopilot retry`"); err != nil {
			return fmt.Errorf("retry: #%d: %w", n, err)
		}
	}
	return nil
}

// retryPlan loads the roadmap and decides which phases flip, writing
// nothing.
func retryPlan(ctx context.Context, dir string, ids []string, all bool) (f *roadmap.File, want []*roadmap.Node, already []string, err error) {
	// Deps on issues ("#12") load: a roadmap run with --issues parks
	// phases too.
	rm, err := roadmap.Load(dir, roadmap.Options{External: roadmap.IsIssueRef})
	if err != nil {
		return nil, nil, nil, err
	}
	for _, id := range ids {
		n := rm.Node(id)
		if n == nil {
			return nil, nil, nil, fmt.Errorf("retry: no phase %q in %s", id, rm.ManifestPath)
		}
		if n.State == manifest.Pending {
			already = append(already, id)
			continue
		}
		if n.State != manifest.Blocked && n.State != manifest.Failed {
			return nil, nil, nil, fmt.Errorf("retry: phase %s is [%s]; only [blocked] or [failed] phases can be retried", id, n.State)
		}
		want = append(want, n)
	}
	if all {
		for _, n := range rm.Nodes {
			if n.State == manifest.Blocked {
				want = append(want, n)
			}
		}
	}
	// Dependents parked with "waits on <id>" come back with it.
	waits := map[string]string{}
	backup := "" // the person's last save, kept as a run's writes keep it
	if c, err := worktree.Open(ctx, dir, nil); err == nil {
		top := c.Dir
		backup = state.Layout{Top: top}.ManifestBackup()
		recs, _ := state.ReadJournal(state.Layout{Top: top}.JournalPath())
		hist, _ := state.History(recs)
		for id, h := range hist {
			if h.Last == "blocked" && h.WaitsOn != "" {
				waits[id] = h.WaitsOn
			}
		}
	}
	seen := map[string]bool{}
	for i := 0; i < len(want); i++ {
		seen[want[i].ID] = true
		for _, d := range rm.Dependents(want[i]) {
			if d.State == manifest.Blocked && waits[d.ID] != "" && !seen[d.ID] {
				want = append(want, d)
				seen[d.ID] = true
			}
		}
	}
	return &roadmap.File{Path: rm.ManifestPath, Backup: backup}, want, already, nil
}
