package work_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/review"
	"github.com/claudopilot/claudopilot/sandbox"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/work"
)

// The review gate under SANDBOX=bwrap (issue 13): the reviewer runs in the
// sandbox in its read-only detached checkout, reads its prompt, diff and
// manifest-line files from the phase's log folder (which the hidden base
// checkout holds), and its PASS verdict is accepted; its write into the
// base checkout fails there (unconfined, the same write lands). The
// script sandbox_review runs the same through the driver under
// CLAUDOPILOT_SOAK=1.
func TestReviewerInTheSandbox(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap (bwrap) is not installed")
	}
	t.Parallel()
	for _, confined := range []bool{true, false} {
		t.Run(map[bool]string{true: "bwrap", false: "off"}[confined], func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.runner.Agent = f.agent("echo work > work.txt\n" + doneBody)
			if o := f.run(job()); !o.OK {
				t.Fatalf("the worker: %+v", o)
			}
			stray := filepath.Join(f.top, "review-stray")
			cmd := f.agent(`touch '` + stray + `' 2>/dev/null
grep -q "$CLAUDOPILOT_REVIEW_FINGERPRINT" "$CLAUDOPILOT_PROMPT_FILE" || { echo "cannot read the prompt file"; exit 3; }
grep -q '^+work$' "$CLAUDOPILOT_REVIEW_DIFF" || { echo "cannot read the diff"; exit 4; }
grep -q "\*\*$CLAUDOPILOT_PHASE\*\*" "$CLAUDOPILOT_MANIFEST_LINE_FILE" || { echo "cannot read the manifest line"; exit 5; }
echo "CLAUDOPILOT_ROLE=$CLAUDOPILOT_ROLE"
printf '<!-- claudopilot-review:v1 {"fingerprint":"%s","phase":"%s","head":"%s","base":"%s","verdict":"PASS","findings":[]} -->\n' \
	"$CLAUDOPILOT_REVIEW_FINGERPRINT" "$CLAUDOPILOT_PHASE" "$CLAUDOPILOT_REVIEW_HEAD" "$CLAUDOPILOT_REVIEW_BASE"
`)
			r := &work.Reviewer{Git: f.git, Layout: f.layout, Cmd: cmd, Env: testEnv(), KillGrace: time.Second, Timeout: time.Minute}
			if confined {
				r.Sandbox = &sandbox.Config{Hide: []string{sandbox.Real(f.top)}, Keep: sandbox.ToolPaths("", strings.Trim(strings.TrimPrefix(cmd, ". "), "'"))}
			}
			o := f.runReview(r, scheduler.ReviewJob{ID: "p1", Title: "first phase", Doc: "p1-first.md", Gate: "true", Round: 1, Index: 1, Of: 1})
			if o.Verdict.Kind != review.PassKind || o.Err != nil {
				b, _ := os.ReadFile(o.LogPath)
				t.Fatalf("verdict %v (%s), %v; want PASS\n%s", o.Verdict.Kind, o.Verdict.Why, o.Err, b)
			}
			if b, _ := os.ReadFile(o.LogPath); !strings.Contains(string(b), "CLAUDOPILOT_ROLE=reviewer\n") {
				t.Errorf("the reviewer's log:\n%s", b)
			}
			_, err := os.Stat(stray)
			if landed := err == nil; landed == confined {
				t.Errorf("the reviewer's write into the base checkout landed: %v, want %v (sandboxed %v)", landed, !confined, confined)
			}
		})
	}
}

func (f *fixture) runReview(r *work.Reviewer, j scheduler.ReviewJob) scheduler.ReviewOutcome {
	f.t.Helper()
	return r.Review(f.ctx, j)
}
