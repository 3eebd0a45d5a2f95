package land

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
)

// GateDirs lists the merge gate's worktrees: GateDir, and those that
// MERGE_BATCH_GATE=each made beside it (gate-2, gate-3, …).
func GateDirs(l state.Layout) []string {
	more, _ := filepath.Glob(GateDir(l) + "-[0-9]*")
	return append([]string{GateDir(l)}, more...)
}

// link is one phase's merge commit in a merge train.
type link struct {
	i      int // its job's index
	j      scheduler.MergeJob
	tip    string
	tree   string
	commit string
	note   string // what build warns of (secrets an allow accepted)
}

// MergeBatch lands js as a merge train. Each phase's merge commit
// (`Merge <id>: <title>`, with its manifest flip) is built on the one
// before, so the train is a first-parent chain exactly as single landings
// make. Only the top is gated; green, the base moves to it in one
// compare-and-swap and every phase has landed. Red, the train is bisected:
// the middle is gated, and so on, until the longest green prefix is known;
// it lands, the first red phase fails with reason gate (its log is the
// gate's on the commit that adds it), and the phases after it come back
// Again, for the next train. A phase that cannot join (a conflict, a
// scope or secret refusal) fails alone; one whose branch moved comes back
// Again.
//
// Nothing of a train is recorded before the compare-and-swap, so a crash
// leaves either the old base (the phases land again, as a train or alone)
// or the new one (each is found landed, its tip in the base and [merged]
// in the base's manifest): nothing is merged twice, and the base only
// ever moves to a gated commit.
func (o *Owner) MergeBatch(ctx context.Context, js []scheduler.MergeJob) []scheduler.MergeOutcome {
	outs := make([]scheduler.MergeOutcome, len(js))
	o.stopWatching()
	known := o.noteBase(ctx)
	if err := o.finishPending(ctx); err != nil {
		// Merge says what it waits for.
		return again(js, outs, o.Merge(ctx, js[0]))
	}
	for try := 0; try < attempts; try++ {
		if !o.train(ctx, js, outs, known) {
			return outs
		}
		known = "" // the base moved: read it again
	}
	outs[0] = scheduler.MergeOutcome{ID: js[0].ID, Waiting: "the base keeps moving (" + o.Layout.Base + " moved during each of the last " + fmt.Sprint(attempts) + " tries); the merge lands when it settles"}
	return again(js, outs, outs[0])
}

// again sets the first outcome to first and every other to Again.
func again(js []scheduler.MergeJob, outs []scheduler.MergeOutcome, first scheduler.MergeOutcome) []scheduler.MergeOutcome {
	first.ID = js[0].ID
	outs[0] = first
	for i := 1; i < len(js); i++ {
		outs[i] = scheduler.MergeOutcome{ID: js[i].ID, Again: true}
	}
	return outs
}

// train makes one attempt; it returns true when the base moved under it.
// known is the base's value read just before (noteBase), "" to read it.
func (o *Owner) train(ctx context.Context, js []scheduler.MergeJob, outs []scheduler.MergeOutcome, known string) bool {
	base := known
	if base == "" {
		var err error
		if base, err = o.Git.RevParse(ctx, "refs/heads/"+o.Layout.Base); err != nil {
			for i, j := range js {
				outs[i] = scheduler.MergeOutcome{ID: j.ID, Err: fmt.Errorf("base branch %s: %w", o.Layout.Base, err)}
			}
			return false
		}
	}
	var chain []link
	top := base
	for i, j := range js {
		outs[i] = scheduler.MergeOutcome{ID: j.ID}
		tip := j.Tip
		if cur, err := o.Git.RevParse(ctx, "refs/heads/"+o.Layout.Branch(j.ID)); err == nil {
			tip = cur
		} else if tip == "" {
			outs[i].Err = err
			continue
		}
		// On the base itself (the train's first link) the merge base
		// answers the ancestry question and serves build's checks too;
		// further up the chain they are two questions.
		var landed bool
		mb := ""
		if top == base {
			mb, _ = o.Git.MergeBase(ctx, base, tip)
			landed = mb == tip
		} else {
			ok, err := o.Git.IsAncestor(ctx, tip, base)
			landed = ok && err == nil
		}
		if landed && work.Landed(ctx, o.Git, o.Layout, j.ID) {
			// Landed before a crash: only the bookkeeping is left.
			if err := o.markLive(j); err != nil {
				outs[i].Err = err
				continue
			}
			o.cleanupLater(ctx, j.ID, tip, base)
			outs[i].OK, outs[i].Commit = true, base
			continue
		}
		commit, tree, out, stop, moved := o.build(ctx, j, top, tip, mb)
		if stop {
			out.ID = j.ID
			if moved {
				// The branch took a lockfile regeneration: built again
				// in the next train.
				out = scheduler.MergeOutcome{ID: j.ID, Again: true}
			}
			outs[i] = out
			continue
		}
		chain = append(chain, link{i: i, j: j, tip: tip, tree: tree, commit: commit, note: out.Detail})
		top = commit
	}
	if len(chain) == 0 {
		return false
	}
	green, red, redLog, err := o.gateTrain(ctx, chain, outs)
	if err != nil {
		c := chain[max(red, 0)]
		outs[c.i].Err, outs[c.i].LogPath = err, redLog
		for _, l := range chain {
			if l.i != c.i {
				outs[l.i] = scheduler.MergeOutcome{ID: l.j.ID, Again: true}
			}
		}
		return false
	}
	if green >= 0 {
		prefix := chain[:green+1]
		pjs := make([]scheduler.MergeJob, len(prefix))
		tips := make([]string, len(prefix))
		for k, l := range prefix {
			pjs[k], tips[k] = l.j, l.tip
		}
		res, moved := o.publish(ctx, pjs, tips, base, prefix[len(prefix)-1].commit)
		if moved {
			return true
		}
		if !res.OK {
			// Nothing landed (a wait, an error): the first says why,
			// the rest come back.
			res.ID = chain[0].j.ID
			outs[chain[0].i] = res
			for _, l := range chain[1:] {
				outs[l.i] = scheduler.MergeOutcome{ID: l.j.ID, Again: true}
			}
			return false
		}
		for k, l := range prefix {
			flaky := outs[l.i].Flaky
			outs[l.i] = scheduler.MergeOutcome{ID: l.j.ID, OK: true, Commit: l.commit, Flaky: flaky, Detail: l.note}
			if k == len(prefix)-1 {
				outs[l.i].Detail = joinNote(l.note, res.Detail)
			}
		}
	}
	if red >= 0 {
		c := chain[red]
		outs[c.i] = scheduler.MergeOutcome{ID: c.j.ID, Reason: state.ReasonGate, LogPath: redLog,
			Detail: fmt.Sprintf("the gate is red on the merge with %s (in a merge train, after %d phase(s) before it that landed): see %s", o.Layout.Base, red, redLog)}
		for _, l := range chain[red+1:] {
			outs[l.i] = scheduler.MergeOutcome{ID: l.j.ID, Again: true}
		}
	}
	return false
}

// gateTrain finds the longest green prefix of chain: green is the index of
// its top (-1: none), red the index of the first red commit (-1: none) and
// redLog its gate's log. Only the top is gated when it is green; a red top
// is bisected (the invariant: chain[hi] is red, everything below lo is
// green). With GateEach every prefix is gated, side by side.
func (o *Owner) gateTrain(ctx context.Context, chain []link, outs []scheduler.MergeOutcome) (green, red int, redLog string, err error) {
	if o.GateEach && len(chain) > 1 {
		return o.gateEach(ctx, chain, outs)
	}
	top := len(chain) - 1
	ok, log, err := o.gateLink(ctx, chain[top], GateDir(o.Layout), outs)
	if err != nil {
		return -1, top, log, err
	}
	if ok {
		return top, -1, "", nil
	}
	lo, hi, green := 0, top, -1
	redLog = log
	for lo < hi {
		mid := (lo + hi) / 2
		ok, log, err := o.gateLink(ctx, chain[mid], GateDir(o.Layout), outs)
		if err != nil {
			return -1, mid, log, err
		}
		if ok {
			lo, green = mid+1, mid
		} else {
			hi, redLog = mid, log
		}
	}
	return green, hi, redLog, nil
}

// gateEach gates every prefix of chain concurrently, the k-th in its own
// gate worktree, as GitHub's merge queue does.
func (o *Owner) gateEach(ctx context.Context, chain []link, outs []scheduler.MergeOutcome) (green, red int, redLog string, err error) {
	type res struct {
		ok  bool
		log string
		err error
	}
	rs := make([]res, len(chain))
	var wg sync.WaitGroup
	for k := range chain {
		dir := GateDir(o.Layout)
		if k > 0 {
			dir = fmt.Sprintf("%s-%d", dir, k+1)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, log, err := o.gateLink(ctx, chain[k], dir, outs)
			rs[k] = res{ok, log, err}
		}()
	}
	wg.Wait()
	green = -1
	for k, r := range rs {
		if r.err != nil {
			return green, k, r.log, r.err
		}
		if !r.ok {
			return green, k, r.log, nil
		}
		green = k
	}
	return green, -1, "", nil
}

// gateLink gates one commit of a train in dir, at most 1+GateRetries
// times while it is red; a tree that passed before is not gated again.
// A red gate that turns green on a rerun is a flake, noted in the
// outcome for the journal.
func (o *Owner) gateLink(ctx context.Context, l link, dir string, outs []scheduler.MergeOutcome) (bool, string, error) {
	if o.passed(l.tree, l.j.Gate) {
		return true, "", nil
	}
	var reds []string
	for {
		ok, log, err := o.gateIn(ctx, l.j, l.commit, dir)
		if err != nil {
			return false, log, err
		}
		if ok {
			o.pass(l.tree, l.j.Gate)
			if len(reds) > 0 {
				o.mu.Lock()
				outs[l.i].Flaky = fmt.Sprintf("the merge gate was red %d time(s) before green (GATE_RETRIES): see %v", len(reds), reds)
				o.mu.Unlock()
			}
			return true, log, nil
		}
		reds = append(reds, log)
		if len(reds) > o.GateRetries {
			return false, log, nil
		}
	}
}
