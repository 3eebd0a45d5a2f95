package web

import "time"

// The queue's feed on the page (docs/queue.md): the scanners that refill
// the queue, the promote loop's steps, and the campaigns' progress.

// Scanner is one scanner as the API shows it.
type Scanner struct {
	Name string `json:"name"`
	From string `json:"from"` // "built in", or the committed file
	Off  bool   `json:"switched_off"`
	// Running: it runs now, or waits for its agent slot.
	Running bool `json:"running"`
	// LastRun is its newest run's end; Filed, Dropped and Error that
	// run's outcome, Issues what it filed.
	LastRun time.Time `json:"last_run,omitzero"`
	Filed   int       `json:"filed"`
	Dropped int       `json:"dropped"`
	Error   string    `json:"error,omitempty"`
	Issues  []Filed   `json:"issues,omitempty"`
}

// Filed is an issue a scanner filed.
type Filed struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
}

// PromoteStep is one step of the promote loop (PROMOTE_TO) with its
// newest outcome: promoted, or red (tried again at the next interval).
type PromoteStep struct {
	From string    `json:"from"`
	To   string    `json:"to"`
	Kind string    `json:"kind"`
	At   time.Time `json:"at"`
	PR   int       `json:"pr,omitempty"`
	Why  string    `json:"why,omitempty"`
}

// Feed is what a FeedSource gives: the scanners (none without a refill)
// and the promote steps (none without a promote ledger).
type Feed struct {
	Scanners []Scanner
	Promote  []PromoteStep
}

// FeedSource reads the feed now. It may read files: State calls it outside
// the model's lock.
type FeedSource func() Feed

// SetFeed makes the state show the queue's feed, from src.
func (m *Model) SetFeed(src FeedSource) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.feed = src
}

// feedNow reads the feed source, if any, outside the lock.
func (m *Model) feedNow() Feed {
	m.mu.Lock()
	src := m.feed
	m.mu.Unlock()
	if src == nil {
		return Feed{}
	}
	return src()
}

// Campaign is one campaign's progress (issues labelled campaign:<name>):
// its issues this driver knows, merged, running, and left (offered or
// parked), as the one fold counts them (runview.Fold.Campaigns).
type Campaign struct {
	Name    string `json:"name"`
	Done    int    `json:"done"`
	Running int    `json:"running"`
	Left    int    `json:"left"`
}
