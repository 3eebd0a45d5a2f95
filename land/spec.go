package land

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// The merge owner's part of the speculative gates (scheduler/spec.go): it
// builds a car's commit, gates it in a gate worktree of its slot's, and
// moves the base to the top of the green cars. The scheduler decides
// which phases go together and on top of what.

var _ scheduler.SpecMerger = (*Owner)(nil)

// GateDirs lists the merge gate's worktrees: GateDir, and those of the
// other gate slots beside it (gate-2, gate-3, …) and PUSH_BASE's
// (gate-upstream).
func GateDirs(l state.Layout) []string {
	more, _ := filepath.Glob(GateDir(l) + "-[0-9]*")
	return append(append([]string{GateDir(l)}, more...), upstreamGate(l))
}

// slotDir is the gate worktree of gate slot slot (0-based).
func slotDir(l state.Layout, slot int) string {
	if slot == 0 {
		return GateDir(l)
	}
	return fmt.Sprintf("%s-%d", GateDir(l), slot+1)
}

// link is one phase's merge commit in a car.
type link struct {
	j      scheduler.MergeJob
	tip    string
	tree   string
	commit string
	train  string // the car's first-parent commit, written with this link's (buildAlso)
}

// Build makes a car's commit: each phase's merge commit (`Merge <id>:
// <title>`, with its [merged] flip in the manifest) built on the one
// before, starting on c.On (the commit of the car ahead, or the base tip);
// with one phase that commit is the car's, with several they are a side
// line that one first-parent commit (`Merge train: …`, the side line's
// tree) merges. So every first-parent commit the base gets is one the gate
// ran on, and a bisection still finds each phase's own commit.
//
// A phase that cannot join fails alone (a protected file, a secret,
// conflict markers, its scope, or a conflict with the base itself); one
// that conflicts with a car ahead, not landed yet, comes back Ahead; one
// whose branch moved (a lockfile regenerated) comes back Again. A phase
// found landed already (a crash after the base moved) is only booked.
func (o *Owner) Build(ctx context.Context, c scheduler.CarJob) scheduler.CarBuild {
	b := scheduler.CarBuild{Outs: make([]scheduler.MergeOutcome, len(c.Jobs))}
	base := c.On
	if base == "" {
		o.stopWatching()
		known := o.noteBase(ctx)
		if err := o.finishPending(ctx); err != nil {
			b.Waiting = o.pendingNote(err)
			return b
		}
		if up, stop, moved := o.levelFirst(ctx); stop {
			b.Err, b.Waiting = up.Err, scheduler.WaitDetail(up.Wait, up.Waiting)
			return b
		} else if moved {
			known = ""
		}
		if base = known; base == "" {
			var err error
			if base, err = o.Git.RevParse(ctx, "refs/heads/"+o.Layout.Base); err != nil {
				b.Err = fmt.Errorf("base branch %s: %w", o.Layout.Base, err)
				return b
			}
		}
		b.Base = base
	}
	landed, err := o.landedOn(ctx, c)
	if err != nil {
		b.Err = err
		return b
	}
	top := base
	var chain []link
	for k, j := range c.Jobs {
		b.Outs[k].ID = j.ID
		tip := j.Tip
		if cur, err := o.Git.RevParse(ctx, "refs/heads/"+o.Layout.Branch(j.ID)); err == nil {
			tip = cur
		} else if tip == "" {
			b.Err = err
			return b
		}
		if landed[j.ID] {
			if done, err := o.landedBefore(ctx, j, tip); err != nil {
				b.Err = err
				return b
			} else if done {
				b.Outs[k] = scheduler.MergeOutcome{ID: j.ID, OK: true}
				continue
			}
		}
		// The last job's build writes the train's first-parent commit
		// over it too, in the same pack (one commit-tree fewer per car);
		// when it does not join, commit-tree writes it below.
		var also *worktree.Also
		if k == len(c.Jobs)-1 && len(chain) > 0 {
			also = &worktree.Also{Base: base, Msg: o.trainMessage(append(chain[:len(chain):len(chain)], link{j: j, tip: tip}))}
		}
		commit, tree, second, out, stop, moved := o.buildAlso(ctx, j, top, tip, also)
		if stop {
			b.Outs[k] = o.refused(j, out, moved, c.On != "" || len(chain) > 0)
			if b.Outs[k].Err != nil {
				b.Err = b.Outs[k].Err
				return b
			}
			continue
		}
		chain = append(chain, link{j: j, tip: tip, tree: tree, commit: commit, train: second})
		b.Joined, b.Tips, b.Notes = append(b.Joined, k), append(b.Tips, tip), append(b.Notes, out.Detail)
		top = commit
	}
	o.carCommit(ctx, &b, base, chain)
	return b
}

// carCommit sets b's commit and tree: the one link's merge, or the
// train's first-parent commit over chain's links on base (written with
// the last link's merge, or here by commit-tree when the job meant to be
// last did not join).
func (o *Owner) carCommit(ctx context.Context, b *scheduler.CarBuild, base string, chain []link) {
	switch len(chain) {
	case 0:
		return
	case 1:
		b.Commit, b.Tree = chain[0].commit, chain[0].tree
		return
	}
	last := chain[len(chain)-1]
	b.Tree = last.tree
	if b.Commit = last.train; b.Commit != "" {
		return
	}
	var err error
	if b.Commit, err = o.Git.CommitTree(ctx, b.Tree, []string{base, last.commit}, o.trainMessage(chain)); err != nil {
		b.Err = err
	}
}

// refused is the outcome of a job whose build stopped: on a base that
// holds phases not landed yet (speculative), a conflict is theirs as much
// as its own, so it comes back Ahead instead of failing.
func (o *Owner) refused(j scheduler.MergeJob, out scheduler.MergeOutcome, moved, speculative bool) scheduler.MergeOutcome {
	out.ID = j.ID
	switch {
	case moved:
		return scheduler.MergeOutcome{ID: j.ID, Again: true}
	case speculative && out.Reason == state.ReasonConflict && !strings.HasPrefix(out.Detail, markerNote):
		return scheduler.MergeOutcome{ID: j.ID, Ahead: true, Detail: out.Detail}
	}
	return out
}

// trainMessage is the message of a car's first-parent commit.
func (o *Owner) trainMessage(chain []link) string {
	var ids, lines []string
	for _, l := range chain {
		ids = append(ids, l.j.ID)
		lines = append(lines, fmt.Sprintf("- %s: %.12s (%s)", l.j.ID, l.tip, strings.SplitN(l.j.Title, "\n", 2)[0]))
	}
	return "Merge train: " + strings.Join(ids, ", ") + "\n\n" + strings.Join(lines, "\n") + "\n"
}

// landedOn reads which of c's phases the base's committed manifest marks
// [merged]: one read for the car, not one per phase.
func (o *Owner) landedOn(ctx context.Context, c scheduler.CarJob) (map[string]bool, error) {
	src, ok, err := o.Git.ReadFile(ctx, "refs/heads/"+o.Layout.Base, o.Layout.ManifestRel())
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	if !ok {
		return out, nil
	}
	m, _ := manifest.Parse(src) // a manifest with problems elsewhere still tells
	if m == nil {
		return out, nil
	}
	for _, j := range c.Jobs {
		if p := m.Phase(j.ID); p != nil && p.State == manifest.Merged {
			out[j.ID] = true
		}
	}
	return out, nil
}

// landedBefore books a phase the base holds already (a driver killed
// after its landing): its tip is in the base, and it is [merged] there.
func (o *Owner) landedBefore(ctx context.Context, j scheduler.MergeJob, tip string) (bool, error) {
	base, err := o.Git.RevParse(ctx, "refs/heads/"+o.Layout.Base)
	if err != nil {
		return false, err
	}
	if in, err := o.Git.IsAncestor(ctx, tip, base); err != nil || !in {
		return false, err
	}
	if err := o.markLive(j); err != nil {
		return false, err
	}
	o.cleanupLater(ctx, j.ID, tip, base)
	return true, nil
}

// GateCar gates a car's commit in its slot's gate worktree, at most
// 1+GateRetries times while it is red; a tree that passed the same gate
// before is not gated again. A red gate that turns green on a rerun is a
// flake.
func (o *Owner) GateCar(ctx context.Context, g scheduler.CarGate) scheduler.CarGated {
	return o.gateCar(ctx, g, slotDir(o.Layout, g.Slot))
}

// gateCar is GateCar in the gate worktree dir.
func (o *Owner) gateCar(ctx context.Context, g scheduler.CarGate, dir string) scheduler.CarGated {
	j := g.Jobs[0]
	if o.passed(g.Tree, j.Gate) {
		return scheduler.CarGated{OK: true}
	}
	for _, k := range g.Jobs[1:] {
		if k.Gating != nil {
			k.Gating()
		}
	}
	var reds []string
	for {
		ok, log, err := o.gateIn(ctx, j, g.Commit, dir)
		if err != nil {
			return scheduler.CarGated{Log: log, Err: err}
		}
		if ok {
			o.pass(g.Tree, j.Gate)
			out := scheduler.CarGated{OK: true, Log: log}
			if len(reds) > 0 {
				out.Flaky = fmt.Sprintf("the merge gate was red %d time(s) before green (GATE_RETRIES): see %v", len(reds), reds)
			}
			return out
		}
		reds = append(reds, log)
		if len(reds) > o.GateRetries {
			return scheduler.CarGated{Log: log, Detail: "the gate is red on the merge with " + o.Layout.Base + ": see " + log}
		}
	}
}

// Publish moves the base from p.From to p.To, the top of the green cars
// at the front of the speculation, in one compare-and-swap, brings the
// base checkout along, marks every phase merged in the live file and
// cleans up after them in the background. Moved: the base moved since
// the cars were built.
func (o *Owner) Publish(ctx context.Context, p scheduler.CarPublish) scheduler.CarPublished {
	o.stopWatching()
	if err := o.finishPending(ctx); err != nil {
		return scheduler.CarPublished{Out: scheduler.MergeOutcome{Waiting: o.pendingNote(err)}}
	}
	out, moved := o.publish(ctx, p.Jobs, p.Tips, p.From, p.To)
	return scheduler.CarPublished{Out: out, Moved: moved}
}
