package issues

import (
	"context"
	"errors"
	"fmt"
	"github.com/claudopilot/claudopilot/state"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/claudopilot/claudopilot/prompts"
	"github.com/claudopilot/claudopilot/review"
	"github.com/claudopilot/claudopilot/work"
)

// ReviewConfig is the review gate of the queue (docs/review.md): after a
// pull request's checks are green, and before it is merged or handed for
// review, reviewer agents read it; their verdict is posted on the pull
// request and counts only when the driver's own identity posted it for
// exactly the live head, base, issue body and pull request body.
type ReviewConfig struct {
	Cmd       string // REVIEW_CMD; empty: no review gate
	Lenses    []string
	Skeptics  int    // reviewers per round (default 1)
	MaxRounds int    // default 3
	Slots     int    // reviewers at once across the queue (default 1)
	Label     string // on the issue and pull request while under review (default agent-review)
}

// DefaultReviewLabel marks an issue and its pull request under review.
const DefaultReviewLabel = "agent-review"

func (q *Queue) initReview() {
	r := &q.cfg.Review
	if r.MaxRounds < 1 {
		r.MaxRounds = 3
	}
	r.Skeptics = max(r.Skeptics, 1)
	r.Slots = max(r.Slots, 1)
	if len(r.Lenses) == 0 {
		r.Lenses = []string{"correctness", "security", "scope", "tests"}
	}
	if r.Label == "" {
		r.Label = DefaultReviewLabel
	}
	q.revSlots = make(chan struct{}, r.Slots)
}

// reviewInputs are what a queue fingerprint is computed from.
type reviewInputs struct {
	head, base        string
	issueBody, prBody string
}

func (in reviewInputs) fingerprint() string {
	return review.Fingerprint(in.head, in.base, []byte(in.issueBody), in.prBody)
}

// liveInputs reads the fingerprint's inputs as they are now: the pull
// request's head and body, the base's tip on the remote, the issue body.
func (w *worker) liveInputs(ctx context.Context) (reviewInputs, error) {
	q := w.q
	var in reviewInputs
	p, err := q.gh.PR(ctx, w.pr.Number)
	if err != nil {
		return in, fmt.Errorf("read pull request #%d: %w", w.pr.Number, err)
	}
	is, err := q.gh.Issue(ctx, w.n)
	if err != nil {
		return in, fmt.Errorf("read issue %s: %w", w.id, err)
	}
	if err := q.fetch(ctx, q.cfg.Base); err != nil {
		return in, err
	}
	base, err := q.git.RevParse(ctx, "refs/remotes/"+q.cfg.Remote+"/"+q.cfg.Base)
	if err != nil {
		return in, err
	}
	in.head, in.base, in.issueBody, in.prBody = p.HeadSHA, base, is.Body, p.Body
	return in, nil
}

// ownVerdicts are the review markers on the pull request that this
// driver's identity posted for this issue and pull request, oldest first.
// Comments by anyone else, however much they look like ours, never count.
func (w *worker) ownVerdicts(ctx context.Context) ([]review.Marker, error) {
	q := w.q
	self := q.gh.Self()
	if self == "" {
		if _, err := q.gh.Login(ctx); err != nil {
			return nil, err
		}
		if self = q.gh.Self(); self == "" {
			return nil, errors.New("the driver's own login is unknown, so no verdict can be told from a forgery")
		}
	}
	cs, err := q.gh.Comments(ctx, w.pr.Number)
	if err != nil {
		return nil, err
	}
	var out []review.Marker
	for _, c := range cs {
		if c.Author != self {
			continue
		}
		for _, m := range review.Parse([]byte(c.Body)) {
			if m.Phase == w.id && m.PR == w.pr.Number {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// accepted is the verdict this driver posted for exactly the live inputs.
func accepted(ms []review.Marker, in reviewInputs, id string, pr int) review.Verdict {
	var mine []review.Marker
	for _, m := range ms {
		if m.Fingerprint == in.fingerprint() {
			mine = append(mine, m)
		}
	}
	return review.Accept(mine, review.Want{Phase: id, Fingerprint: in.fingerprint(), Head: in.head, Base: in.base, PR: pr})
}

// reviewed runs the review gate on a green pull request. pass is true when
// it may land (or no gate is set). When the reviewers block, the findings
// go to a worker attempt whose commits are pushed: sha and since then
// name the new head, and pass is false (its checks are waited for again).
// f ends the issue: still blocked after the last round, or a review that
// could not be run or recorded (it fails closed).
func (w *worker) reviewed(ctx context.Context, docRel string, sha *string, since *time.Time) (pass bool, f *failure) {
	q := w.q
	rc := q.cfg.Review
	if rc.Cmd == "" {
		return true, nil
	}
	fail := func(err error) (bool, *failure) {
		return false, &failure{reason: string(state.ReasonReview), detail: err.Error()}
	}
	labelled := false
	defer func() {
		if labelled {
			fin := context.WithoutCancel(ctx)
			for _, n := range []int{w.n, w.pr.Number} {
				_ = q.gh.RemoveLabel(fin, n, rc.Label)
			}
		}
	}()
	reran, moved := false, 0
	for {
		if ctx.Err() != nil {
			return false, &failure{reason: "interrupted"}
		}
		own, err := w.ownVerdicts(ctx)
		if err != nil {
			return fail(err)
		}
		// The round: one more than the BLOCKING verdicts we posted on
		// this pull request, so a restarted driver keeps counting.
		round := 1
		for _, m := range own {
			if m.Verdict == review.Blocking {
				round++
			}
		}
		in, err := w.liveInputs(ctx)
		if err != nil {
			return fail(err)
		}
		if in.head != *sha {
			// Someone pushed to the pull request: its checks come first.
			q.logIssue(w.n, "the head moved to %s before the review; checking again", short(in.head))
			if err := w.follow(ctx, in.head); err != nil {
				return false, &failure{reason: string(state.ReasonWorktree), detail: err.Error()}
			}
			*sha, *since = in.head, q.clock.Now()
			return false, nil
		}
		if v := accepted(own, in, w.id, w.pr.Number); v.Kind == review.PassKind {
			// Our PASS for exactly this tree (a restarted driver).
			return true, nil
		}
		if !labelled {
			for _, n := range []int{w.n, w.pr.Number} {
				if err := q.gh.AddLabels(ctx, n, rc.Label); err != nil && !errors.Is(err, ErrNotFound) {
					return fail(err)
				}
			}
			labelled = true
		}
		q.logIssue(w.n, "review round %d of pull request #%d at %s", round, w.pr.Number, short(in.head))
		vs, err := w.runReviewers(ctx, in, round)
		if ctx.Err() != nil {
			return false, &failure{reason: "interrupted"}
		}
		if err != nil {
			return fail(err)
		}
		d := review.Decide(review.Round{N: round, MaxRounds: rc.MaxRounds, Reran: reran}, vs)
		if d.Action == review.Rerun {
			reran = true
			q.logIssue(w.n, "no trusted verdict in review round %d; running it again", round)
			continue
		}
		// Accept at the live state: a tree that moved under the
		// reviewers is reviewed again, and that is no round.
		live, err := w.liveInputs(ctx)
		if err != nil {
			return fail(err)
		}
		if live.fingerprint() != in.fingerprint() {
			if moved++; moved > maxUpdates {
				return fail(errors.New("the pull request or its base kept moving during the review"))
			}
			q.logIssue(w.n, "the pull request or its base moved during the review; reviewing again")
			continue
		}
		verdict := review.Pass
		if d.Action != review.Land {
			verdict = review.Blocking
		}
		m := review.Marker{Fingerprint: in.fingerprint(), Phase: w.id, Head: in.head, Base: in.base, Verdict: verdict, Findings: d.Findings, PR: w.pr.Number}
		if m.Findings == nil {
			m.Findings = []string{}
		}
		if _, err := q.gh.PostComment(ctx, w.pr.Number, verdictComment(round, m)); err != nil {
			return fail(fmt.Errorf("post the review verdict: %w", err))
		}
		// The verdict counts as read back from GitHub: our own comment,
		// for this issue, pull request and tree.
		own, err = w.ownVerdicts(ctx)
		if err != nil {
			return fail(err)
		}
		v := accepted(own, live, w.id, w.pr.Number)
		findings := v.Findings
		if v.Why != "" {
			// e.g. a PASS now where this tree was found BLOCKING before:
			// two verdicts for one fingerprint block.
			findings = append(findings, "claudopilot: "+v.Why)
		}
		switch {
		case v.Kind == review.PassKind:
			q.logIssue(w.n, "review PASS in round %d", round)
			return true, nil
		case v.Kind == review.None:
			return fail(fmt.Errorf("the posted verdict could not be read back as the driver's own: %s", v.Why))
		case round >= rc.MaxRounds:
			return false, &failure{reason: string(state.ReasonReview), detail: fmt.Sprintf("still BLOCKING after %d round(s): %s", round, strings.Join(findings, "; "))}
		}
		q.logIssue(w.n, "review BLOCKING in round %d: %s", round, strings.Join(findings, "; "))
		// The scheduler sends a worker with the findings, then lands
		// again.
		ff := w.logPath("findings")
		if err := writeFindings(ff, w.id, findings); err != nil {
			ff = ""
		}
		return false, &failure{reason: string(state.ReasonReview), detail: fmt.Sprintf("BLOCKING in round %d of %d: %s", round, rc.MaxRounds, strings.Join(findings, "; ")), log: ff, head: in.head, checks: findings}
	}
}

// runReviewers runs the round's reviewers, each in a review slot, and
// judges each one's own output against the inputs recomputed when it
// ended.
func (w *worker) runReviewers(ctx context.Context, in reviewInputs, round int) ([]review.Verdict, error) {
	q := w.q
	rc := q.cfg.Review
	shares := review.Share(rc.Lenses, rc.Skeptics)
	vs := make([]review.Verdict, len(shares))
	errs := make([]error, len(shares))
	var wg sync.WaitGroup
	for i, lenses := range shares {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case q.revSlots <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-q.revSlots }()
			vs[i], errs[i] = w.runReviewer(ctx, in, round, lenses)
		}()
	}
	wg.Wait()
	return vs, errors.Join(errs...)
}

func (w *worker) runReviewer(ctx context.Context, in reviewInputs, round int, lenses []string) (review.Verdict, error) {
	q := w.q
	dir := q.LogDir(w.n)
	n, promptFile, err := work.ReserveReview(dir)
	if err != nil {
		return review.Verdict{}, err
	}
	stem := filepath.Join(dir, fmt.Sprintf("reviewer-%d", n))
	log, docFile, prFile, diffFile := stem+".log", stem+".issue.md", stem+".pr-body", stem+".diff"
	if err := os.WriteFile(docFile, []byte(in.issueBody), 0o644); err != nil {
		return review.Verdict{}, err
	}
	if err := os.WriteFile(prFile, []byte(in.prBody), 0o644); err != nil {
		return review.Verdict{}, err
	}
	if _, err := q.git.RevParse(ctx, in.head+"^{commit}"); err != nil {
		if err := q.fetch(ctx, w.branch); err != nil {
			return review.Verdict{}, err
		}
	}
	diff, err := q.git.DiffSince(ctx, in.base, in.head)
	if err != nil {
		return review.Verdict{}, err
	}
	if err := os.WriteFile(diffFile, []byte(diff+"\n"), 0o644); err != nil {
		return review.Verdict{}, err
	}
	fp := in.fingerprint()
	lens := strings.Join(lenses, ",")
	gate := q.cfg.Gate
	if gate == "" {
		gate = "true"
	}
	checkout := q.layout().ReviewCheckout(w.id, n)
	example := review.Marker{Fingerprint: fp, Phase: w.id, Head: in.head, Base: in.base, Verdict: review.Pass, Findings: []string{}, PR: w.pr.Number}
	prompt, err := prompts.Set{Dirs: q.cfg.PromptDirs}.Render("reviewer", prompts.ReviewData{
		ID: w.id, Title: w.is.Title, Round: round, Lens: lens, Doc: docFile, Checkout: checkout,
		Head: in.head, Base: in.base, BaseBranch: q.cfg.Base, Diff: diffFile, Gate: gate + " (and the pull request's checks)",
		Fingerprint: fp, ManifestLine: prFile, Marker: example.Line(), PR: w.pr.Number,
	})
	if err != nil {
		return review.Verdict{}, err
	}
	proc := work.ReviewProcess{
		Git: q.git, Checkout: checkout, Head: in.head, Cmd: q.cfg.Review.Cmd, Prompt: prompt, PromptFile: promptFile, LogPath: log,
		LogCap: q.cfg.LogCap, Redact: q.known(), StuckTimeout: q.cfg.StuckTimeout, Timeout: q.cfg.AgentTimeout, KillGrace: q.cfg.KillGrace,
		Sandbox: q.cfg.Sandbox, Show: []string{dir},
		Env: work.ReviewEnv(q.agentEnv,
			"CLAUDOPILOT_ROLE=reviewer",
			"CLAUDOPILOT_PHASE="+w.id,
			"CLAUDOPILOT_PHASE_DOC="+docFile,
			"CLAUDOPILOT_BASE="+q.cfg.Base,
			"CLAUDOPILOT_GATE="+gate,
			"CLAUDOPILOT_PROMPT_FILE="+promptFile,
			"CLAUDOPILOT_REVIEW_FINGERPRINT="+fp,
			"CLAUDOPILOT_REVIEW_HEAD="+in.head,
			"CLAUDOPILOT_REVIEW_BASE="+in.base,
			"CLAUDOPILOT_MANIFEST_LINE_FILE="+prFile,
			"CLAUDOPILOT_REVIEW_LENS="+lens,
			"CLAUDOPILOT_REVIEW_ROUND="+strconv.Itoa(round),
			"CLAUDOPILOT_REVIEW_DIFF="+diffFile,
			"CLAUDOPILOT_REVIEW_PR="+strconv.Itoa(w.pr.Number),
		),
	}
	q.logIssue(w.n, "reviewer %d started (round %d, %s)", n, round, lens)
	out, res, err := proc.Run(ctx)
	if err != nil || ctx.Err() != nil {
		return review.Verdict{Kind: review.None, Why: fmt.Sprint(err)}, nil
	}
	live, err := w.liveInputs(ctx)
	if err != nil {
		return review.Verdict{}, err
	}
	v := review.Accept(review.Parse(out), review.Want{Phase: w.id, Fingerprint: live.fingerprint(), Head: live.head, Base: live.base, PR: w.pr.Number})
	if v.Kind == review.None && live.fingerprint() != fp {
		v.Why = "stale: the pull request, its base or the issue changed while the reviewer ran"
	}
	return proc.Judge(v, res), nil
}

// verdictComment is the pull request comment that records a verdict.
func verdictComment(round int, m review.Marker) string {
	var b strings.Builder
	fmt.Fprintf(&b, "claudopilot review, round %d: **%s** for %s at %s (base %s).\n", round, m.Verdict, m.Phase, short(m.Head), short(m.Base))
	for _, f := range m.Findings {
		b.WriteString("- " + strings.ReplaceAll(f, "\n", " ") + "\n")
	}
	b.WriteString("\n" + m.Line() + "\n")
	return b.String()
}

// writeFindings writes the findings file a worker sent back gets.
func writeFindings(path, id string, findings []string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# Review findings for " + id + "\n\n")
	for _, f := range findings {
		b.WriteString("- " + strings.ReplaceAll(f, "\n", "\n  ") + "\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
