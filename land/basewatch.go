package land

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/claudopilot/claudopilot/atomicfile"
	"github.com/claudopilot/claudopilot/state"
)

// baseTrack knows the value the driver last wrote to the base ref, so a
// move by anyone else (a human's commit, an agent's `git update-ref`) is
// noticed. pending is the value of a write under way: a reader that sees
// the ref at it between the write and its record is not misled.
type baseTrack struct {
	mu      sync.Mutex
	last    string // what the driver wrote, or found at start
	pending string // a write under way
	// writes counts the driver's own writes begun: a read of the ref
	// during which one began may be older than last, and is not judged.
	writes uint64
	// own holds every value the driver moved the base to in this run.
	own   map[string]bool
	notes []BaseMove
	since time.Time // the first look: from then on moves are this run's finds
}

// writing and wrote bracket the driver's own move of the base ref.
func (b *baseTrack) writing(sha string) {
	b.mu.Lock()
	b.pending = sha
	b.writes++
	if b.own == nil {
		b.own = map[string]bool{}
	}
	b.own[sha] = true
	b.mu.Unlock()
}

func (b *baseTrack) wrote(sha string, ok bool) {
	b.mu.Lock()
	if ok {
		b.last = sha
	}
	b.pending = ""
	b.mu.Unlock()
}

// BaseMove is a move of the base branch that the driver did not make.
type BaseMove struct {
	Branch string    `json:"branch"`
	From   string    `json:"from"`
	To     string    `json:"to"`
	At     time.Time `json:"at"`
	// Dir is the base branch's checkout, if any. Stale is true when the
	// checkout's index did not follow the move (the ref was moved by
	// `git update-ref`, a fetch or a push, not a commit there): `git
	// status` there shows the difference as staged changes.
	Dir   string `json:"dir,omitempty"`
	Stale bool   `json:"checkout_stale,omitempty"`
}

func (m BaseMove) String() string {
	s := fmt.Sprintf("the base %s was moved outside the driver: %.12s -> %.12s", m.Branch, m.From, m.To)
	if m.Stale {
		s += fmt.Sprintf("; its checkout %s did not follow (git status there shows the difference as staged changes; `git -C %s read-tree -m -u %.12s %.12s` brings it forward)", m.Dir, m.Dir, m.From, m.To)
	}
	return s
}

// CheckBase compares the base ref with the value the driver last wrote.
// The first call only records it. A move by anyone else is returned,
// recorded in .claudopilot/state/base-moved.json for `status`, and taken
// as the new value, so each move is reported once. Merge calls it first
// too, and keeps what it finds for TakeBaseMoves.
func (o *Owner) CheckBase(ctx context.Context) (*BaseMove, error) {
	m, _, err := o.checkBase(ctx)
	return m, err
}

// checkBase is CheckBase that also returns the base's value it read.
func (o *Owner) checkBase(ctx context.Context) (*BaseMove, string, error) {
	b := &o.base
	b.mu.Lock()
	writes, busy := b.writes, b.pending != ""
	b.mu.Unlock()
	// Through the shared resolver, which reads the ref's file at each
	// lookup: a rev-parse of its own cost a process per landing (issue
	// 25 §1).
	now, err := o.Git.RevParse(ctx, "refs/heads/"+o.Layout.Base)
	if err != nil {
		return nil, "", err
	}
	if o.baseRead != nil {
		o.baseRead(now)
	}
	b.mu.Lock()
	from := b.last
	if busy || b.writes != writes {
		// The driver moved the base while this read ran (the poll
		// beside a merge): the value read may be the one before, and
		// judged against the new one it looked like a move backwards.
		// The next read tells.
		b.mu.Unlock()
		return nil, now, nil
	}
	if from == "" || now == b.last || now == b.pending {
		if from == "" {
			b.last, b.since = now, time.Now().UTC()
		}
		b.mu.Unlock()
		return nil, now, nil
	}
	own := b.own[now]
	b.mu.Unlock()
	if own {
		// A move forward along the driver's own merges (a write whose
		// success was not seen) is not a foreign move.
		if fwd, err := o.Git.IsAncestor(ctx, from, now); err == nil && fwd {
			b.mu.Lock()
			if b.last == from {
				b.last = now
			}
			b.mu.Unlock()
			return nil, now, nil
		}
	}
	b.mu.Lock()
	b.last = now
	b.mu.Unlock()
	m := &BaseMove{Branch: o.Layout.Base, From: from, To: now, At: time.Now().UTC()}
	if dir, checkedOut, err := o.Git.WorktreeOf(ctx, o.Layout.Base); err == nil && checkedOut {
		m.Dir = dir
		m.Stale = o.indexAt(ctx, dir, from, now)
	}
	if err := saveBaseMove(o.Layout, m); err != nil {
		return m, now, err
	}
	return m, now, nil
}

// indexAt is true when the index in dir still holds from's version of the
// paths that differ between from and to: the checkout did not follow.
func (o *Owner) indexAt(ctx context.Context, dir, from, to string) bool {
	paths, err := o.Git.DiffNames(ctx, from, to)
	if err != nil || len(paths) == 0 {
		return false
	}
	paths = paths[:min(len(paths), 1000)] // enough to tell; bounded argv
	return o.Git.IndexMatches(ctx, dir, from, paths)
}

// noteBase is CheckBase at the start of a merge; what it finds waits for
// TakeBaseMoves. It returns the base's value it read ("" when it could
// not), which the merge's first try starts from instead of reading the
// ref again: the compare-and-swap that lands the merge checks that the
// base is still there, however old the read.
func (o *Owner) noteBase(ctx context.Context) string {
	m, now, err := o.checkBase(ctx)
	if m != nil {
		o.base.mu.Lock()
		o.base.notes = append(o.base.notes, *m)
		o.base.mu.Unlock()
	}
	if err != nil {
		return ""
	}
	return now
}

// TakeBaseMoves returns the moves the merges found since the last call.
func (o *Owner) TakeBaseMoves() []BaseMove {
	o.base.mu.Lock()
	defer o.base.mu.Unlock()
	n := o.base.notes
	o.base.notes = nil
	return n
}

func baseMovedPath(l state.Layout) string {
	return filepath.Join(l.StateDir(), "base-moved.json")
}

func saveBaseMove(l state.Layout, m *BaseMove) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(l.StateDir(), 0o755); err != nil {
		return err
	}
	// Atomic (status reads it while the driver runs); not fsynced: the
	// next run's watch sees the base as it is (issue 25's fsync budget).
	return atomicfile.Write(baseMovedPath(l), append(b, '\n'), 0o644, atomicfile.NoSync())
}

// LastBaseMove reads the last move of the base that the driver did not
// make; nil when there was none.
func LastBaseMove(l state.Layout) (*BaseMove, error) {
	m, err := readState[BaseMove](baseMovedPath(l))
	if errors.Is(err, errTorn) {
		return nil, fmt.Errorf("%s: %w", baseMovedPath(l), err)
	}
	return m, err
}
