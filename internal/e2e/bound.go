package e2e

import (
	"testing"
	"time"
)

// boundMargin is left before go test's deadline, so a test that gives up
// still prints its own message and the driver's output, not the panic of
// -timeout.
const boundMargin = 30 * time.Second

// Bound is how long an end-to-end test may wait for the driver to reach a
// point (an upper bound, never a wait): until shortly before go test's own
// deadline for the test binary (-timeout, 10 minutes by default), 30
// minutes without one. A fixed bound of a few minutes turned a loaded
// machine into a failure while the package's clock still had room (issue
// 23: TestQueueHostileIssueReviewed's 3-minute bound broke at load ~40
// after the root package was split), whereas a hang still ends in the
// test's own message.
func Bound(t testing.TB) time.Duration {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, ok := d.Deadline(); ok {
			return max(time.Until(end)-boundMargin, time.Second)
		}
	}
	return 30 * time.Minute
}
