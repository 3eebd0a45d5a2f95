package scanner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/claudopilot/claudopilot/scheduler"
)

// Refill runs the next scanner in rotation when the queue runs low
// (docs/queue.md): fewer than Threshold issues ready or proposed and
// unclaimed, and at least Interval since the last scanner run (the
// ledger's, so a restart does not run one at once). One scanner runs at a
// time, off the caller's loop.
type Refill struct {
	Set    *Set
	Runner *Runner
	Filer  *Filer
	Ledger *Ledger
	// Slots lends each scanner a lane slot from the run's pool, through
	// the pacer's slots and the usage-limit breakers (scheduler.Side);
	// nil: a scanner runs at once (by hand, outside a run).
	Slots *scheduler.Side
	// Threshold is REFILL_THRESHOLD (0: refill off); Interval is
	// SCANNER_INTERVAL_MINUTES.
	Threshold int
	Interval  time.Duration
	Now       func() time.Time
	Log       func(format string, args ...any)

	mu      sync.Mutex
	running string // the scanner running now (or waiting for its slot)
	wg      sync.WaitGroup
}

// Report is what one scanner run found and did.
type Report struct {
	Scanner  string
	Head     string
	Log      string
	Filed    []Filed
	Would    []Candidate // a dry run: what would be filed
	Dropped  []Drop
	Problems []string
}

// Low is told, after each poll of the queue, how many issues are ready or
// proposed and unclaimed. When that is below the threshold and the
// interval has passed, it starts the next scanner and returns at once.
func (r *Refill) Low(ctx context.Context, waiting int) {
	if r.Threshold <= 0 || waiting >= r.Threshold {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running != "" {
		return
	}
	st, err := r.Ledger.Read()
	if err != nil {
		r.logf("refill: the scanner ledger: %v", err)
		return
	}
	if !st.Newest.At.IsZero() && r.now().Sub(st.Newest.At) < r.Interval {
		return
	}
	sc, ok := r.next(st)
	if !ok {
		return
	}
	r.logf("refill: %d issue(s) ready or proposed, fewer than REFILL_THRESHOLD %d: running scanner %s", waiting, r.Threshold, sc.Name)
	r.start(ctx, sc.Name)
}

// Start runs scanner name now, in the background, as the refill would (a
// maintainer's "run now" on the page): one scanner at a time, through
// the slot pool; switched off or not. It says why it cannot.
func (r *Refill) Start(ctx context.Context, name string) error {
	if _, ok := r.Set.Find(name); !ok {
		return fmt.Errorf("scanner %q: %w (scanners: %v)", name, ErrNoScanner, r.Set.Names())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running != "" {
		return fmt.Errorf("scanner %s is running: one scanner at a time", r.running)
	}
	r.logf("refill: scanner %s asked for by hand", name)
	r.start(ctx, name)
	return nil
}

// start runs scanner name in the background; r.mu is held.
func (r *Refill) start(ctx context.Context, name string) {
	r.running = name
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() { r.mu.Lock(); r.running = ""; r.mu.Unlock() }()
		rep, err := r.Run(ctx, name, false)
		if err != nil {
			r.logf("refill: %v", err)
			return
		}
		r.logf("refill: scanner %s filed %d proposal(s), dropped %d", name, len(rep.Filed), len(rep.Dropped))
	}()
}

// Running is the scanner running now (or waiting for its slot), "" none.
func (r *Refill) Running() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running
}

// Status is one scanner as the lists show it (the page's): its prompt's
// origin, its switch, whether it runs now, its newest run and what that
// run filed.
type Status struct {
	Name, From string
	Off        bool
	Running    bool
	Last       *Record
	Filed      []Record
}

// Statuses lists the scanners, from the ledger and the refill.
func (r *Refill) Statuses() ([]Status, error) {
	st, err := r.Ledger.Read()
	running := r.Running()
	var out []Status
	for _, sc := range r.Set.Scanners {
		s := Status{Name: sc.Name, From: sc.From, Off: st.Off[sc.Name], Running: sc.Name == running, Filed: st.LastFiled[sc.Name]}
		if rec, ok := st.LastRun[sc.Name]; ok {
			s.Last = &rec
		}
		out = append(out, s)
	}
	return out, err
}

// Wait waits for a scanner Low started.
func (r *Refill) Wait() { r.wg.Wait() }

// next is the scanner after the newest run's, in name order, skipping
// those switched off.
func (r *Refill) next(st State) (Scanner, bool) {
	all := r.Set.Scanners
	start := 0
	if i := slices.IndexFunc(all, func(s Scanner) bool { return s.Name == st.Newest.Scanner }); i >= 0 {
		start = i + 1
	}
	for k := range all {
		s := all[(start+k)%len(all)]
		if !st.Off[s.Name] {
			return s, true
		}
	}
	return Scanner{}, false
}

// Run runs the scanner called name and files what it found, deduped; a
// dry run files nothing and records nothing. A run (not a dry one) is
// recorded in the ledger, failed or not, so the interval holds.
func (r *Refill) Run(ctx context.Context, name string, dry bool) (Report, error) {
	rep := Report{Scanner: name}
	sc, ok := r.Set.Find(name)
	if !ok {
		return rep, fmt.Errorf("scanner %q: %w (scanners: %v)", name, ErrNoScanner, r.Set.Names())
	}
	out, err := r.runOnSlot(ctx, sc)
	if errors.Is(err, errNoSlot) {
		return rep, err // it never ran: nothing to record
	}
	rep.Head, rep.Log, rep.Problems = out.Head, out.Log, out.Problems
	var file []Candidate
	if err == nil {
		file, rep.Dropped, err = r.Filer.Plan(ctx, name, out.Candidates)
	}
	if dry {
		rep.Would = file
		return rep, err
	}
	if err == nil {
		rep.Filed, err = r.Filer.File(ctx, name, out.Head, file)
	}
	rec := Record{At: r.now(), Kind: KindRun, Scanner: name, Filed: len(rep.Filed), Dropped: len(rep.Dropped), Log: out.Log}
	if err != nil {
		rec.Error = err.Error()
	}
	if lerr := r.Ledger.Append(rec); lerr != nil && err == nil {
		err = lerr
	}
	return rep, err
}

// errNoSlot: the scanner never got a slot (its context ended, or the run).
var errNoSlot = errors.New("no slot")

// runOnSlot runs sc on a slot from the pool (waiting for it), and gives
// the slot back with the usage limit the scanner hit, if any.
func (r *Refill) runOnSlot(ctx context.Context, sc Scanner) (Output, error) {
	if r.Slots == nil {
		return r.Runner.Run(ctx, r.Set, sc, Lane{})
	}
	slot, err := r.Slots.Acquire(ctx, "scanner "+sc.Name)
	if err != nil {
		return Output{}, fmt.Errorf("scanner %s: waiting for a slot: %w (%w)", sc.Name, err, errNoSlot)
	}
	out, err := r.Runner.Run(ctx, r.Set, sc, Lane{ID: slot.Lane, Cmd: slot.Cmd, Account: slot.Account})
	slot.Release(out.Cooldown, out.Limit, out.Log)
	return out, err
}

// Switch turns a scanner off (on false) or on, in the ledger.
func (r *Refill) Switch(name string, on bool) error {
	if _, ok := r.Set.Find(name); !ok {
		return fmt.Errorf("scanner %q: %w (scanners: %v)", name, ErrNoScanner, r.Set.Names())
	}
	k := KindOff
	if on {
		k = KindOn
	}
	return r.Ledger.Append(Record{At: r.now(), Kind: k, Scanner: name})
}

func (r *Refill) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Refill) logf(format string, args ...any) {
	if r.Log != nil {
		r.Log(format, args...)
	}
}
