package land_test

import (
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/state"
)

// A branch that commits a secret (an AWS key swept into .env by `git add
// -A`) is refused with reason secret: the detail names .env:1 and the
// rule, never the value; main, the branch, its worktree and the live
// manifest stay as they were. With SECRET_SCAN=0 (NoSecretScan) the same
// branch lands. The script safe_secret runs the same through the driver,
// with the supervisor's rewrite, under CLAUDOPILOT_SOAK=1.
func TestMergeRefusesASecret(t *testing.T) {
	t.Parallel()
	const value = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY7q3Lk9Zp2Wx"
	files := map[string]string{"work/p1.txt": "p1\n", ".env": "AWS_SECRET_ACCESS_KEY=" + value + "\n"}
	t.Run("scanned", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, manifestSrc)
		base := f.rev("main")
		_, tip := f.branch("p1", "p1-first.md", files)
		out := f.owner.Merge(f.ctx, job("p1", "first phase", tip))
		f.owner.Wait()
		if out.Reason != state.ReasonSecret || out.Err != nil {
			t.Fatalf("outcome = %+v, want reason secret", out)
		}
		if want := ".env:1: secret-assignment (AWS_SECRET_ACCESS_KEY)"; !strings.Contains(out.Detail, want) {
			t.Errorf("detail %q does not name %q", out.Detail, want)
		}
		if strings.Contains(out.Detail, "wJalrXUtnFEMI") {
			t.Errorf("detail %q holds the secret", out.Detail)
		}
		f.refused(out, "p1", base)
	})
	t.Run("SECRET_SCAN=0", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, manifestSrc)
		f.owner.NoSecretScan = true
		_, tip := f.branch("p1", "p1-first.md", files)
		f.mustMerge(job("p1", "first phase", tip))
		if got := f.committed("main", ".env"); !strings.Contains(got, value) {
			t.Errorf("main's .env = %q, want the branch's", got)
		}
	})
}
