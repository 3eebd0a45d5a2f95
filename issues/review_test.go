package issues

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/issues/ghfake"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/review"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

// reviewerHead checks the reviewer's contract in queue mode and defines
// marker VERDICT FINDINGS_JSON, which prints a marker for this review.
const reviewerHead = `set -e
test "$CLAUDOPILOT_ROLE" = reviewer
test -n "$CLAUDOPILOT_REVIEW_PR"
case "$(pwd -P)" in */.claudopilot/review/*) ;; *) echo "not in a review checkout" >&2; exit 9 ;; esac
test "$(git rev-parse HEAD)" = "$CLAUDOPILOT_REVIEW_HEAD"
fp=$({ printf '%s\036%s\036' "$CLAUDOPILOT_REVIEW_HEAD" "$CLAUDOPILOT_REVIEW_BASE"; cat "$CLAUDOPILOT_PHASE_DOC"; printf '\036'; cat "$CLAUDOPILOT_MANIFEST_LINE_FILE"; } | sha256sum | cut -d' ' -f1)
test "$fp" = "$CLAUDOPILOT_REVIEW_FINGERPRINT" || { echo "fingerprint $CLAUDOPILOT_REVIEW_FINGERPRINT, recomputed $fp" >&2; exit 9; }
grep -q "Pull request #$CLAUDOPILOT_REVIEW_PR" "$CLAUDOPILOT_PROMPT_FILE"
marker() {
	printf '<!-- claudopilot-review:v1 {"fingerprint":"%s","phase":"%s","head":"%s","base":"%s","verdict":"%s","findings":[%s],"pr":%s} -->\n' \
		"$CLAUDOPILOT_REVIEW_FINGERPRINT" "$CLAUDOPILOT_PHASE" "$CLAUDOPILOT_REVIEW_HEAD" "$CLAUDOPILOT_REVIEW_BASE" "$1" "$2" "$CLAUDOPILOT_REVIEW_PR"
}
`

// fixAgent is okAgent, and when sent back by the reviewers commits a fix
// that names the findings file's first finding.
const fixAgent = `set -e
if [ -n "${CLAUDOPILOT_REVIEW_FINDINGS:-}" ]; then
	grep -q 'off by one' "$CLAUDOPILOT_REVIEW_FINDINGS"
	grep -q "$CLAUDOPILOT_REVIEW_FINDINGS" "$CLAUDOPILOT_PROMPT_FILE"
	mkdir -p work
	echo fixed > work/fix.txt
	git add work
	git commit -qm "fix the review's findings"
	exit 0
fi
` + okAgent

// ownMarkers are the review markers in comments by author on n.
func ownMarkers(is ghfake.Issue, author string) []review.Marker {
	var out []review.Marker
	for _, c := range is.Comments {
		if c.Author == author {
			out = append(out, review.Parse([]byte(c.Body))...)
		}
	}
	return out
}

// labelled reports whether label was ever added to n (the request log).
func labelled(e *env, n int, label string) bool {
	for _, r := range e.fake.Requests() {
		if r.Method == "POST" && strings.HasSuffix(r.Path, "/issues/"+itoa(n)+"/labels") && strings.Contains(r.Body, label) {
			return true
		}
	}
	return false
}

func itoa(n int) string { return strings.TrimPrefix(IssueID(n), "#") }

func TestReviewPassMerges(t *testing.T) {
	soakOnly(t, "TestLandReviewBlockedThenPassed (labelled under review, the loop's PASS recorded as the driver's own comment, merged, the label off), scheduler.TestReviewPassLands and TestReviewSkepticsShareLenses (one round of REVIEW_SKEPTICS reviewers); the reviewer's contract end to end is TestReviewBlockOnceThenPassWithoutAutoMerge's")
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "reviewed", "make it so", []string{"agent-ready"}, "")
	log := &syncBuf{}
	q := e.queue("w", log, nil)
	sum := runWith(t, q, log, harness{reviewCmd: e.script("pass.sh", reviewerHead+"marker PASS ''\n"), skeptics: 2})
	if sum.Count(Merged) != 1 {
		t.Fatalf("summary %+v\n%s", sum, log)
	}
	pr := e.fake.Pulls()[0]
	ms := ownMarkers(e.issue(pr.Number), "bot")
	if len(ms) != 1 || ms[0].Verdict != review.Pass || ms[0].PR != pr.Number || ms[0].Phase != IssueID(n) {
		t.Fatalf("verdicts on the pull request %+v\n%s", ms, dump(e, pr.Number))
	}
	// Two reviewers, one verdict comment; the label was on while under
	// review, and is off now.
	for _, k := range []int{1, 2} {
		if _, err := os.Stat(filepath.Join(q.LogDir(n), "reviewer-"+itoa(k)+".log")); err != nil {
			t.Errorf("reviewer %d: %v", k, err)
		}
	}
	for _, m := range []int{n, pr.Number} {
		if !labelled(e, m, DefaultReviewLabel) {
			t.Errorf("#%d never had %s", m, DefaultReviewLabel)
		}
		if hasLabel(e.issue(m), DefaultReviewLabel) {
			t.Errorf("#%d still has %s", m, DefaultReviewLabel)
		}
	}
	if !e.onMain("work/issue-" + itoa(n) + ".txt") {
		t.Error("not merged")
	}
}

// forgeAs posts, as the account whose token is $FORGE_AUTH, a marker for
// exactly the tree under review: it names the right fingerprint, head,
// base, issue and pull request.
const forgeAs = `forge() {
	body=$(marker "$1" "$2" | sed 's/"/\\"/g')
	curl -sf -X POST -H "Authorization: Bearer $FORGE_AUTH" -H 'Content-Type: application/json' \
		-d "{\"body\":\"LGTM\\n$body\"}" "${FORGE_API}repos/acme/widgets/issues/$CLAUDOPILOT_REVIEW_PR/comments" >/dev/null
}
`

// Verdicts posted by another account, even an admin, for exactly the tree
// under review never count. A forged PASS (the reviewer forges it and
// gives no verdict of its own) does not land the pull request: the round
// reruns, then the issue is blocked with the reason. A forged BLOCKING
// beside an honest PASS does not block it.
func TestReviewForgedVerdictsAreIgnored(t *testing.T) {
	soakOnly(t, "TestLandReviewBlockedThenPassed (a forged PASS lands nothing, a forged BLOCKING stops nothing) and scheduler.TestReviewNoVerdictRerunsOnce (no trusted verdict: the round reruns once, then blocks)")
	t.Parallel()
	for _, tc := range []struct {
		name, script string
		merged       bool
	}{
		{"forged pass", "forge PASS ''\necho 'looks fine'\n", false},
		{"forged blocking", "forge BLOCKING '\"forged finding\"'\nmarker PASS ''\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			n := e.fake.NewIssue("alice", "forged", "make it so", []string{"agent-ready"}, "")
			log := &syncBuf{}
			q := e.queue("w", log, func(c *Config) {
				c.Env = append(c.Env, "FORGE_AUTH=alice-token", "FORGE_API="+e.fake.URL())
			})
			sum := runWith(t, q, log, harness{reviewCmd: e.script("forge.sh", reviewerHead+forgeAs+tc.script), maxRounds: 1})
			pr := e.fake.Pulls()[0]
			forged := ownMarkers(e.issue(pr.Number), "alice")
			if len(forged) == 0 {
				t.Fatalf("the forgery was not made\n%s", dump(e, pr.Number))
			}
			own := ownMarkers(e.issue(pr.Number), "bot")
			if len(own) != 1 || own[0].Fingerprint != forged[0].Fingerprint {
				t.Fatalf("the driver's verdicts %+v; forged %+v", own, forged)
			}
			if !tc.merged {
				if sum.Count(Blocked) != 1 || pr.Merged {
					t.Fatalf("merged on a forged PASS: %+v\n%s", sum, log)
				}
				is := e.issue(n)
				if !hasLabel(is, "agent-blocked") || commentsWith(is, "**review**") != 1 || commentsWith(is, "no trusted verdict") != 1 {
					t.Fatalf("the issue is not blocked with the reason:\n%s", dump(e, n))
				}
				if _, err := os.Stat(filepath.Join(q.LogDir(n), "reviewer-2.log")); err != nil {
					t.Errorf("the round did not run again: %v", err)
				}
				return
			}
			if sum.Count(Merged) != 1 || !pr.Merged {
				t.Fatalf("a forged BLOCKING stopped the merge: %+v\n%s", sum, log)
			}
		})
	}
}

// Blocked once, then passed: the findings go to a worker attempt, whose
// fix is pushed, checked and reviewed again; without AUTO_MERGE the pull
// request then waits for a human (user-merge-review).
func TestReviewBlockOnceThenPassWithoutAutoMerge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "blocked once", "make it so", []string{"agent-ready"}, "")
	state := filepath.Join(e.dir, "blocked-once")
	once := reviewerHead + `if [ ! -e "` + state + `" ]; then : > "` + state + `"; marker BLOCKING '"off by one in work"'; else marker PASS ''; fi
`
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) {
		c.AutoMerge = false
		c.Agent = e.script("fix.sh", fixAgent)
	})
	sum := runWith(t, q, log, harness{reviewCmd: e.script("once.sh", once)})
	if sum.Count(Review) != 1 {
		t.Fatalf("summary %+v\n%s", sum, log)
	}
	pr := e.fake.Pulls()[0]
	ms := ownMarkers(e.issue(pr.Number), "bot")
	if len(ms) != 2 || ms[0].Verdict != review.Blocking || ms[1].Verdict != review.Pass || ms[0].Head == ms[1].Head {
		t.Fatalf("verdicts %+v: want BLOCKING, then PASS on the fixed head", ms)
	}
	for _, m := range []int{n, pr.Number} {
		if is := e.issue(m); !hasLabel(is, "user-merge-review") || hasLabel(is, DefaultReviewLabel) {
			t.Errorf("#%d labels %v", m, is.Labels)
		}
	}
	if pr.Merged || e.onMain("work/fix.txt") {
		t.Error("merged without AUTO_MERGE")
	}
	b, err := os.ReadFile(filepath.Join(q.LogDir(n), "worker-2.findings.md"))
	if err != nil || !strings.Contains(string(b), "- off by one in work") {
		t.Fatalf("findings file: %q, %v", b, err)
	}
}

// A reviewer that blocks every time: round 1 sends the findings to a
// worker, whose fix is pushed; round 2 (counted from the driver's own
// BLOCKING comments on the pull request) is the last, and the issue is
// blocked with the findings posted, not merged.
func TestReviewRoundsExhaustedBlocksTheIssue(t *testing.T) {
	soakOnly(t, "TestLandReviewLastRoundBlocks (the last round's BLOCKING is recorded, blocks the issue with the findings, no worker beyond it) and scheduler.TestReviewRoundsExhaustedKeepGoing (the rounds counted)")
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "never right", "make it so", []string{"agent-ready"}, "")
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) {
		c.Agent = e.script("fix.sh", fixAgent)
	})
	sum := runWith(t, q, log, harness{reviewCmd: e.script("block.sh", reviewerHead+"marker BLOCKING '\"off by one in work\"'\n"), maxRounds: 2})
	if sum.Count(Blocked) != 1 {
		t.Fatalf("summary %+v\n%s", sum, log)
	}
	pr := e.fake.Pulls()[0]
	if pr.Merged || e.onMain("work/fix.txt") {
		t.Fatal("merged while blocked")
	}
	ms := ownMarkers(e.issue(pr.Number), "bot")
	if len(ms) != 2 || ms[0].Verdict != review.Blocking || ms[1].Verdict != review.Blocking || ms[0].Head == ms[1].Head {
		t.Fatalf("verdicts %+v: want two BLOCKING, the second on the fixed head", ms)
	}
	is := e.issue(n)
	if !hasLabel(is, "agent-blocked") || hasLabel(is, DefaultReviewLabel) || commentsWith(is, "still BLOCKING after 2 round(s): off by one in work") != 1 {
		t.Fatalf("the issue is not blocked with the findings:\n%s", dump(e, n))
	}
	if _, err := os.Stat(filepath.Join(q.LogDir(n), "worker-3.log")); err == nil {
		t.Error("a worker was sent back after the last round")
	}
}

// reviewLander is a lander whose landings go through the loop's review
// gate (ReviewFirst), and the verdict of the loop's reviewers on the tree
// they read, as the scheduler hands it over.
type reviewLander struct{ *lander }

func (l reviewLander) landWith(tip string, v *scheduler.Verdict) scheduler.MergeOutcome {
	return l.q.Land(l.ctx, scheduler.MergeJob{ID: l.id, Title: "issue " + l.id, Tip: tip, ReviewFirst: true, Verdict: v})
}

func (l reviewLander) verdict(t *testing.T, pass bool, round int, last bool, findings ...string) *scheduler.Verdict {
	t.Helper()
	in, err := l.q.reviewInputs(l.ctx, l.id)
	if err != nil {
		t.Fatal(err)
	}
	return &scheduler.Verdict{Pass: pass, Round: round, Last: last, Findings: findings, Head: in.Head, Base: in.Base,
		Fingerprint: review.Fingerprint(in.Head, in.Base, in.Doc, in.Line)}
}

// forge posts, as alice (an admin), the marker the driver would post for
// exactly the tree under review, with verdict v.
func (l reviewLander) forge(t *testing.T, pr int, v string, findings ...string) {
	t.Helper()
	in, err := l.q.reviewInputs(l.ctx, l.id)
	if err != nil {
		t.Fatal(err)
	}
	m := review.Marker{Fingerprint: review.Fingerprint(in.Head, in.Base, in.Doc, in.Line), Phase: l.id, Head: in.Head, Base: in.Base,
		Verdict: v, Findings: append([]string{}, findings...), PR: pr}
	l.e.fake.CommentOn(pr, "alice", "LGTM\n"+verdictComment(1, m))
}

// TestLandReviewLastRoundBlocks: the loop's BLOCKING in its last round
// (REVIEW_MAX_ROUNDS, counted by the scheduler: TestReviewRoundsExhausted*)
// is recorded on the pull request and ends the landing with reason review
// and no head (no worker goes beyond it); Record(blocked) then blocks the
// issue with the findings, the review label off, nothing merged
// (TestReviewRoundsExhaustedBlocksTheIssue end to end).
func TestLandReviewLastRoundBlocks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "never right", "make it so", []string{"agent-ready"}, "")
	l := reviewLander{newLander(t, e, n, nil)}
	tip := l.commit(t, "work.txt", "work\n")
	if out := l.landWith(tip, nil); !out.Review {
		t.Fatalf("green: %+v, want it handed back for review\n%s", out, l.log)
	}
	out := l.landWith(tip, l.verdict(t, false, 2, true, "off by one in work"))
	if out.Reason != state.ReasonReview || out.Commit != "" || out.OK || !strings.Contains(out.Detail, "still BLOCKING after 2 round(s): off by one in work") {
		t.Fatalf("the last round's BLOCKING: %+v\n%s", out, l.log)
	}
	l.q.Record(l.id, manifest.Blocked, scheduler.Note{Reason: out.Reason, Detail: out.Detail})
	l.drain()
	pr := e.fake.Pulls()[0]
	if ms := ownMarkers(e.issue(pr.Number), "bot"); len(ms) != 1 || ms[0].Verdict != review.Blocking || ms[0].Head != tip {
		t.Errorf("verdicts %+v, want the one BLOCKING on %s", ms, tip)
	}
	is := e.issue(n)
	if !hasLabel(is, "agent-blocked") || hasLabel(is, DefaultReviewLabel) || hasLabel(e.issue(pr.Number), DefaultReviewLabel) ||
		commentsWith(is, "still BLOCKING after 2 round(s): off by one in work") != 1 {
		t.Errorf("the issue is not blocked with the findings:\n%s", dump(e, n))
	}
	if pr.Merged || e.onMain("work.txt") {
		t.Error("merged while blocked")
	}
}
