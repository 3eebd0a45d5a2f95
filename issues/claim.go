package issues

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/internal/lazy"
)

// The claim protocol. Every claim, release and end of work is an issue
// comment carrying a hidden marker,
//
//	claimed by <instance>
//	<!-- claudopilot:claim instance=<instance> round=<R> -->
//
// and every instance decides who holds an issue the same way: by folding
// the comments of trusted authors in id order (foldClaims). A round starts
// at 0 and at each effective release or end comment (R is that comment's
// id). In a round the first claim naming the round wins; later claims of
// other instances lose (they back off and remove nothing); more claims of
// the holder refresh it (heartbeats). A release of the holder, by a later
// instance when the claim is stale, or an end comment of the holder (done,
// blocked, interrupted) closes the round. A claim naming an older round
// never counts, so an instance that read the comments before a round ended
// cannot take the issue in the next one by accident.

// NewInstance returns an instance name: host, pid and a random suffix.
func NewInstance() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_' {
			return r
		}
		return '-'
	}, host)
	if host == "" {
		host = "host"
	}
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), randomHex(3))
}

var markerRe = lazy.Regexp(`<!-- claudopilot:(claim|release|end)((?: [a-z]+=[^ >]*)*) -->`)

type marker struct {
	kind     string // claim, release, end
	instance string
	of       string // release: whose claim
	round    int64
}

func parseMarker(body string) (marker, bool) {
	m := markerRe().FindStringSubmatch(body)
	if m == nil {
		return marker{}, false
	}
	mk := marker{kind: m[1]}
	for _, f := range strings.Fields(m[2]) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "instance":
			mk.instance = v
		case "of":
			mk.of = v
		case "round":
			mk.round, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return mk, mk.instance != ""
}

func claimBody(instance string, round int64) string {
	return fmt.Sprintf("claimed by %s\n<!-- claudopilot:claim instance=%s round=%d -->", instance, instance, round)
}

func releaseMarker(instance, of string, round int64) string {
	return fmt.Sprintf("<!-- claudopilot:release instance=%s of=%s round=%d -->", instance, of, round)
}

func endMarker(instance string, round int64) string {
	return fmt.Sprintf("<!-- claudopilot:end instance=%s round=%d -->", instance, round)
}

// claimState is who holds an issue according to its comments.
type claimState struct {
	Round  int64  // the id of the comment that opened the round (0: the first round)
	Holder string // "" when nobody holds it
	First  time.Time
	Last   time.Time // the holder's newest claim comment
}

// foldClaims folds markers of trusted comments, in id order.
func foldClaims(cs []Comment, trusted func(Comment, marker) bool) claimState {
	var st claimState
	for _, c := range cs {
		m, ok := parseMarker(c.Body)
		if !ok || !trusted(c, m) || m.round != st.Round {
			continue
		}
		switch m.kind {
		case "claim":
			switch st.Holder {
			case "":
				st.Holder, st.First, st.Last = m.instance, c.CreatedAt, c.CreatedAt
			case m.instance:
				if c.CreatedAt.After(st.Last) {
					st.Last = c.CreatedAt
				}
			}
		case "release":
			if st.Holder != "" && m.of == st.Holder {
				st = claimState{Round: c.ID}
			}
		case "end":
			if st.Holder != "" && m.instance == st.Holder {
				st = claimState{Round: c.ID}
			}
		}
	}
	return st
}

// claimState reads issue n's comments and folds them. Markers count only
// from our own login, our own instance, or users with write access. Our
// own login is the token's (for an app token "name[bot]", which has no
// collaborator permission to ask for): instances sharing a token trust
// each other's claims, so they never both work one issue.
func (q *Queue) claimState(ctx context.Context, n int) (claimState, []Comment, error) {
	cs, err := q.gh.Comments(ctx, n)
	if err != nil {
		return claimState{}, nil, err
	}
	self := q.gh.Self()
	trust := map[string]bool{}
	for _, c := range cs {
		m, ok := parseMarker(c.Body)
		if !ok || m.instance == q.instance || (self != "" && strings.EqualFold(c.Author, self)) {
			continue
		}
		key := strings.ToLower(c.Author)
		if _, done := trust[key]; done {
			continue
		}
		ok, err := q.gh.HasWrite(ctx, c.Author)
		if err != nil {
			return claimState{}, nil, err
		}
		trust[key] = ok
	}
	st := foldClaims(cs, func(c Comment, m marker) bool {
		return m.instance == q.instance || (self != "" && strings.EqualFold(c.Author, self)) || trust[strings.ToLower(c.Author)]
	})
	return st, cs, nil
}

// claim takes issue n for this instance: add CLAIM_LABEL, remove
// READY_LABEL, comment "claimed by <instance>", then read the comments
// again: if another instance's claim is earlier, back off and remove
// nothing. won reports whether we hold it; round is the round we claimed.
func (q *Queue) claim(ctx context.Context, n int) (won bool, round int64, why string, err error) {
	st, _, err := q.claimState(ctx, n)
	if err != nil {
		return false, 0, "", err
	}
	switch st.Holder {
	case "":
	case q.instance:
		// An earlier try of ours got its comment through but reported an
		// error: the claim is ours.
		if err := q.claimLabels(ctx, n); err != nil {
			return false, 0, "", err
		}
		return true, st.Round, "", nil
	default:
		// READY_LABEL applied after the holder's newest claim comment
		// (with CLAIM_LABEL gone, or the issue would not be here) is a
		// person queueing the issue again: release the old claim.
		who, at, err := q.gh.LabeledBy(ctx, n, q.cfg.Labels.Ready)
		if err != nil {
			return false, 0, "", err
		}
		if at.IsZero() || !at.After(st.Last) {
			return false, 0, "held by " + st.Holder, nil
		}
		body := fmt.Sprintf("released the claim of %s: %s queued the issue again after it\n%s", st.Holder, who, releaseMarker(q.instance, st.Holder, st.Round))
		if _, err := q.gh.PostComment(ctx, n, body); err != nil {
			return false, 0, "", err
		}
		if st, _, err = q.claimState(ctx, n); err != nil {
			return false, 0, "", err
		}
		if st.Holder != "" {
			return false, 0, "held by " + st.Holder, nil
		}
	}
	is, err := q.gh.Issue(ctx, n)
	if err != nil {
		return false, 0, "", err
	}
	if is.State != "open" || !is.HasLabel(q.cfg.Labels.Ready) || is.HasLabel(q.cfg.Labels.Claim) {
		return false, 0, "no longer ready", nil
	}
	if l := q.foreignLabel(is); l != "" {
		return false, 0, "claimed by another tool (" + l + ")", nil
	}
	if err := q.claimLabels(ctx, n); err != nil {
		q.undoClaimLabels(ctx, n)
		return false, 0, "", err
	}
	if _, err := q.gh.PostComment(ctx, n, claimBody(q.instance, st.Round)); err != nil {
		q.undoClaimLabels(ctx, n)
		return false, 0, "", err
	}
	after, _, err := q.claimState(ctx, n)
	if err != nil {
		// Unknown: the issue stays claimed; if the claim is ours, the
		// stale-claim check hands it back (we are not working on it).
		return false, 0, "", err
	}
	if after.Holder == q.instance {
		return true, after.Round, "", nil
	}
	if after.Holder == "" {
		// The round ended while we claimed (the holder finished): our
		// claim names an old round. Take back the label we added.
		_ = q.gh.RemoveLabel(ctx, n, q.cfg.Labels.Claim)
		return false, 0, "its round ended while claiming", nil
	}
	return false, 0, "claimed first by " + after.Holder, nil
}

// claimLabels: CLAIM_LABEL on, READY_LABEL off (and BLOCKED_LABEL, when
// an issue was queued again without taking it off).
func (q *Queue) claimLabels(ctx context.Context, n int) error {
	if err := q.gh.AddLabels(ctx, n, q.cfg.Labels.Claim); err != nil {
		return err
	}
	if err := q.gh.RemoveLabel(ctx, n, q.cfg.Labels.Ready); err != nil {
		return err
	}
	return q.gh.RemoveLabel(ctx, n, q.cfg.Labels.Blocked)
}

// undoClaimLabels takes back a claim whose comment did not go through,
// unless the comments say it did after all (then the claim stands, and
// the stale-claim check releases it, since no worker of ours has it).
func (q *Queue) undoClaimLabels(ctx context.Context, n int) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	st, _, err := q.claimState(ctx, n)
	if err != nil || st.Holder != "" {
		return
	}
	if err := q.requeueLabels(ctx, n); err != nil {
		q.logf("#%d: could not take back the claim labels: %v", n, err)
	}
}

// releaseStale releases the claim on issue n if its holder is stale: no
// open pull request from its branch and a newest claim comment older than
// ClaimStale. A claim of our own instance that no worker of ours has (the
// caller makes sure) is released at once, unless it is an earlier run's
// (see below). The release is a comment; when it is the one that counts,
// the labels go back to READY_LABEL.
//
// live tells, at the moment of asking, the issues this driver holds (it
// marks an issue held before its claim comment is posted): our own claim
// is an orphan only if, once the comment is read, the issue is not held.
//
// mine tells the issues this run has claimed, tried to claim or resumed.
// Our own claim on any other issue was taken by an earlier run of this
// clone (the instance name is the clone's, and the repository lock lets
// one driver at a time use it) that was killed before it ended it: that
// claim is not released but resumed (resume, with its round), so the
// issue goes on at once on its kept branch rather than after
// CLAIM_STALE_HOURS. An orphan of this run (its claim went through but
// the claim reported an error) is still released: nothing else would
// ever work it. A blocked issue is not resumed (its end was cut short):
// its claim is released.
func (q *Queue) releaseStale(ctx context.Context, is *Issue, live, mine func(int) bool) (released bool, holder string, resume bool, round int64, err error) {
	st, cs, err := q.claimState(ctx, is.Number)
	if err != nil {
		return false, "", false, 0, err
	}
	now := q.clock.Now()
	if st.Holder == "" && foreignClaimComment(cs) {
		return false, "", false, 0, nil // another tool's claim under the same label: its own janitor's
	}
	if st.Holder == "" {
		// CLAIM_LABEL without a claim comment: an instance died between
		// the two. Stale by the label's age.
		_, at, err := q.gh.LabeledBy(ctx, is.Number, q.cfg.Labels.Claim)
		if err != nil || at.IsZero() || now.Sub(at) < q.cfg.ClaimStale {
			return false, "", false, 0, err
		}
		if pr, err := q.gh.FindPR(ctx, Branch(is.Number), "open"); err != nil || pr != nil {
			return false, "", false, 0, err
		}
		return true, "", false, 0, q.requeueLabels(ctx, is.Number)
	}
	own := st.Holder == q.instance
	if own && live(is.Number) {
		return false, st.Holder, false, 0, nil // being claimed, or worked, right now
	}
	if own && !mine(is.Number) && !is.HasLabel(q.cfg.Labels.Blocked) {
		return false, st.Holder, true, st.Round, nil
	}
	if !own {
		if now.Sub(st.Last) < q.cfg.ClaimStale {
			return false, st.Holder, false, 0, nil
		}
		pr, err := q.gh.FindPR(ctx, Branch(is.Number), "open")
		if err != nil || pr != nil {
			return false, st.Holder, false, 0, err
		}
	}
	body := fmt.Sprintf("released the stale claim of %s: no open pull request, and its newest claim comment is from %s (older than %s)\n%s",
		st.Holder, st.Last.UTC().Format(time.RFC3339), q.cfg.ClaimStale, releaseMarker(q.instance, st.Holder, st.Round))
	if own {
		body = fmt.Sprintf("released the claim of %s: its claim went through but its worker never started\n%s", q.instance, releaseMarker(q.instance, st.Holder, st.Round))
	}
	c, err := q.gh.PostComment(ctx, is.Number, body)
	if err != nil {
		return false, st.Holder, false, 0, err
	}
	after, _, err := q.claimState(ctx, is.Number)
	if err != nil {
		return false, st.Holder, false, 0, err
	}
	if after.Round != c.ID {
		return false, st.Holder, false, 0, nil // another instance released it first
	}
	if err := q.requeueLabels(ctx, is.Number); err != nil {
		return true, st.Holder, false, 0, err
	}
	return true, st.Holder, false, 0, nil
}

// requeueLabels puts an issue back in the queue: READY_LABEL on (unless it
// is blocked), CLAIM_LABEL off.
func (q *Queue) requeueLabels(ctx context.Context, n int) error {
	is, err := q.gh.Issue(ctx, n)
	if err != nil {
		return err
	}
	if is.State == "open" && !is.HasLabel(q.cfg.Labels.Blocked) {
		if err := q.gh.AddLabels(ctx, n, q.cfg.Labels.Ready); err != nil {
			return err
		}
	}
	return q.gh.RemoveLabel(ctx, n, q.cfg.Labels.Claim)
}

// NotBlockedError is a retry of an issue that is not blocked: open and
// ready or claimed, or closed. Nothing was changed.
type NotBlockedError struct {
	N   int
	Why string
}

func (e *NotBlockedError) Error() string {
	return fmt.Sprintf("issue #%d is %s, not blocked: only a blocked issue can be retried; nothing changed", e.N, e.Why)
}

// Requeue queues blocked issue n again, as a person does: READY_LABEL on,
// BLOCKED_LABEL off, and one comment saying by what. It needs no claim
// marker: the blocking comment ended the claim's round (endMarker), and a
// claim left open anyway is released by the next claimer, which sees
// READY_LABEL applied after the holder's claim (claim). Ready goes on
// first: an issue left carrying both is still taken (claimLabels drops
// BLOCKED_LABEL), one left carrying neither would be lost from the queue.
// A running driver offers it again at its next poll, its counters reset.
func Requeue(ctx context.Context, gh *GitHub, l Labels, n int, by string) error {
	if err := CheckBlocked(ctx, gh, l, n); err != nil {
		return err
	}
	if err := gh.AddLabels(ctx, n, l.Ready); err != nil {
		return err
	}
	if err := gh.RemoveLabel(ctx, n, l.Blocked); err != nil {
		return err
	}
	_, err := gh.PostComment(ctx, n, fmt.Sprintf("queued again by %s: `%s` removed, `%s` added", by, l.Blocked, l.Ready))
	return err
}

// CheckBlocked reads issue n: nil when it is blocked (open, BLOCKED_LABEL,
// not claimed), else *NotBlockedError.
func CheckBlocked(ctx context.Context, gh *GitHub, l Labels, n int) error {
	is, err := gh.Issue(ctx, n)
	if err != nil {
		return err
	}
	switch {
	case is.State != "open":
		return &NotBlockedError{N: n, Why: "closed"}
	case is.HasLabel(l.Claim):
		return &NotBlockedError{N: n, Why: fmt.Sprintf("claimed (%q)", l.Claim)}
	case !is.HasLabel(l.Blocked) && is.HasLabel(l.Ready):
		return &NotBlockedError{N: n, Why: fmt.Sprintf("already queued (%q)", l.Ready)}
	case !is.HasLabel(l.Blocked):
		return &NotBlockedError{N: n, Why: fmt.Sprintf("open without %q", l.Blocked)}
	}
	return nil
}

// foreignLabel is the first of FOREIGN_CLAIM_LABELS on is (other than
// this queue's own claim label), or "".
func (q *Queue) foreignLabel(is *Issue) string {
	for _, l := range q.cfg.ForeignClaims {
		if l != "" && l != q.cfg.Labels.Claim && is.HasLabel(l) {
			return l
		}
	}
	return ""
}

// foreignClaimComment says whether another tool claimed the issue in a
// comment: issue-pilot's "claimed by <lane>" (without this tool's marker)
// or issue-orchestrator's io-claim block (matched as its own parser does,
// in any case: claim_parser.py's CLAIM_BLOCK_PATTERN). Such a claim under
// the shared claim label is that tool's to release, never this queue's.
func foreignClaimComment(cs []Comment) bool {
	for _, c := range cs {
		b := strings.TrimSpace(c.Body)
		if strings.Contains(b, "claudopilot:") {
			continue
		}
		if strings.HasPrefix(b, "claimed by ") || strings.Contains(strings.ToLower(b), "```io-claim") {
			return true
		}
	}
	return false
}
