package proc

import "context"

// Slots is a pool of agent slots shared by everything that starts agents
// in one driver (the roadmap's runner and the issue queue's workers), so
// together they never run more than its size at once. A process holds its
// slot from its start until its group is dead; waiting on anything else
// (a pull request's checks) holds none. A nil *Slots is no limit.
type Slots struct{ ch chan struct{} }

// NewSlots makes a pool of n slots (n < 1 counts as 1).
func NewSlots(n int) *Slots { return &Slots{ch: make(chan struct{}, max(n, 1))} }

// Acquire waits for a free slot, or until ctx is done.
func (s *Slots) Acquire(ctx context.Context) error {
	if s == nil {
		return nil
	}
	select {
	case s.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Release gives a slot back.
func (s *Slots) Release() {
	if s != nil {
		<-s.ch
	}
}
