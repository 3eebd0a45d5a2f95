// Package promote is the promote loop (docs/queue.md, "Promote loop"):
// green work moves from the base along PROMOTE_TO (base → staging →
// production) through pull requests merged by head SHA with a merge
// commit, so the branches' histories stay one. A red step is reported
// and tried again at the next interval; agents never repair it.
package promote

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/promote/record"
	"github.com/claudopilot/claudopilot/worktree"
)

// The promote ledger's format and its reading are package record's
// (status reads them without linking the queue's GitHub client).
const (
	LedgerName = record.LedgerName
	Promoted   = record.Promoted
	Red        = record.Red
	Waiting    = record.Waiting
	Current    = record.Current
	NotDue     = record.NotDue
)

// Result is one step's outcome (record.Result).
type Result = record.Result

// ReadLedger reads the promote ledger (record.ReadLedger).
func ReadLedger(path string) ([]Result, error) { return record.ReadLedger(path) }

// Latest is each step's newest outcome (record.Latest).
func Latest(rs []Result) []Result { return record.Latest(rs) }

// ReadLatest is Latest of the ledger in stateDir (record.ReadLatest).
func ReadLatest(stateDir string) ([]Result, error) { return record.ReadLatest(stateDir) }

func (p *Promoter) record(r Result) error { return record.Append(p.Ledger, r) }

// Promoter runs the chain.
type Promoter struct {
	GitHub *issues.GitHub
	// Git is the clone, with the driver's environment (fetch).
	Git    *worktree.Client
	Remote string // default origin
	// Base is the chain's first branch (the run's base, known once the
	// queue has started).
	Base  func() string
	To    []string      // PROMOTE_TO
	Every time.Duration // PROMOTE_EVERY_HOURS
	// Grace and Timeout are CHECKS_GRACE and CHECKS_TIMEOUT, Poll how often
	// the pull request's checks are read.
	Grace, Timeout, Poll time.Duration
	Ledger               string // the ledger's path
	Clock                issues.Clock
	// Announce receives every step that ends promoted or red (NOTIFY_CMD's
	// announce and promote-red events).
	Announce func(Result)
	Log      func(format string, args ...any)

	mu sync.Mutex // one round at a time
	// told is each step's outcome last logged ("from\x00to"): a step that
	// stays current or waiting is logged once, not at every poll.
	told map[string]string
}

// ErrNoMergeCommits: the repository allows no merge commits.
var ErrNoMergeCommits = errors.New("PROMOTE_TO needs merge commits, and the repository allows none (allow_merge_commit is off): promotions keep the branches' histories one; allow merge commits, or unset PROMOTE_TO")

// CheckRepo refuses a repository that allows no merge commits.
func CheckRepo(ctx context.Context, gh *issues.GitHub) error {
	allowed, known, err := gh.MergeMethods(ctx)
	if err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	if known && !allowed["merge"] {
		return ErrNoMergeCommits
	}
	return nil
}

// Chain is the branches in order, up to and including to ("" all). A to
// not in the chain is an error.
func (p *Promoter) Chain(to string) ([]string, error) {
	chain := append([]string{p.Base()}, p.To...)
	if to == "" {
		return chain, nil
	}
	i := slices.Index(chain, to)
	if i < 1 {
		return nil, fmt.Errorf("promote: %q is not in PROMOTE_TO (%s)", to, strings.Join(p.To, " "))
	}
	return chain[:i+1], nil
}

// Round runs the chain's steps in order: each one due (or every one,
// now), stopping at a step that is red or still waits for checks. to
// ends the chain at that branch.
func (p *Promoter) Round(ctx context.Context, now bool, to string) ([]Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	chain, err := p.Chain(to)
	if err != nil {
		return nil, err
	}
	last, err := p.lastTried()
	if err != nil {
		return nil, err
	}
	var out []Result
	for i := 0; i+1 < len(chain); i++ {
		from, into := chain[i], chain[i+1]
		if t, ok := last[from+"\x00"+into]; ok && !now && p.Clock.Now().Sub(t) < p.Every {
			out = append(out, Result{Kind: NotDue, From: from, To: into})
			continue
		}
		r := p.step(ctx, from, into)
		r.At = p.Clock.Now()
		out = append(out, r)
		if r.Kind == Promoted || r.Kind == Red {
			if err := p.record(r); err != nil {
				return out, err
			}
			if p.Announce != nil {
				p.Announce(r)
			}
		}
		p.tell(r)
		if r.Kind == Red || r.Kind == Waiting || ctx.Err() != nil {
			break
		}
	}
	return out, ctx.Err()
}

// step promotes from into into: the source's checks green, a pull request
// opened (or the open one reused: its head follows the branch), its checks
// waited for, then merged by head SHA with a merge commit.
func (p *Promoter) step(ctx context.Context, from, into string) Result {
	r := Result{From: from, To: into}
	red := func(format string, args ...any) Result {
		r.Kind, r.Why = Red, fmt.Sprintf(format, args...)
		return r
	}
	head, tip, err := p.heads(ctx, from, into)
	if err != nil {
		return red("%v", err)
	}
	r.SHA = head
	if in, err := p.Git.IsAncestor(ctx, head, tip); err != nil {
		return red("%v", err)
	} else if in {
		r.Kind = Current
		return r
	}
	switch v, failing, err := p.verdict(ctx, head); {
	case err != nil || v == "pending":
		r.Kind, r.Why = Waiting, "checks on "+from+"'s head are not done"
		return r
	case v == "red":
		return red("checks on %s's head %s are red: %s", from, short(head), strings.Join(failing, ", "))
	}
	r.Changelog, err = p.changelog(ctx, tip, head)
	if err != nil {
		return red("changelog: %v", err)
	}
	pr, err := p.pullRequest(ctx, from, into, r.Changelog)
	if err != nil {
		return red("the pull request: %v", err)
	}
	r.PR = pr
	if why := p.waitChecks(ctx, head); why != "" {
		return red("pull request #%d: %s", pr, why)
	}
	title := fmt.Sprintf("Promote %s to %s (#%d)", from, into, pr)
	if err := p.GitHub.Merge(ctx, pr, head, "merge", title); err != nil {
		return red("merge of #%d: %v", pr, err)
	}
	r.Kind = Promoted
	return r
}

// heads fetches both branches and returns their tips on the remote.
func (p *Promoter) heads(ctx context.Context, from, into string) (string, string, error) {
	rm := p.remote()
	spec := func(b string) string { return fmt.Sprintf("+refs/heads/%s:refs/remotes/%s/%s", b, rm, b) }
	if err := p.Git.Fetch(ctx, rm, spec(from), spec(into)); err != nil {
		return "", "", fmt.Errorf("fetch %s and %s: %w", from, into, err)
	}
	head, err := p.Git.RevParse(ctx, "refs/remotes/"+rm+"/"+from)
	if err != nil {
		return "", "", err
	}
	tip, err := p.Git.RevParse(ctx, "refs/remotes/"+rm+"/"+into)
	return head, tip, err
}

// verdict reads the checks of sha: green (none at all is green), red or
// pending.
func (p *Promoter) verdict(ctx context.Context, sha string) (string, []string, error) {
	cs, err := p.GitHub.Checks(ctx, sha)
	if err != nil {
		return "", nil, err
	}
	v, failing := issues.Verdict(cs)
	if len(cs) == 0 {
		v = "none"
	}
	return v, failing, nil
}

// waitChecks waits for the pull request's checks on head: "" when green,
// else why not. No checks at all count as green once Grace has passed;
// pending (or unreadable) ones past Timeout are red.
func (p *Promoter) waitChecks(ctx context.Context, head string) string {
	start := p.Clock.Now()
	for {
		v, failing, err := p.verdict(ctx, head)
		waited := p.Clock.Now().Sub(start)
		switch {
		case err == nil && v == "green":
			return ""
		case err == nil && v == "red":
			return "checks are red: " + strings.Join(failing, ", ")
		case err == nil && v == "none" && waited >= p.Grace:
			return ""
		case waited >= p.Timeout:
			return fmt.Sprintf("checks still pending after CHECKS_TIMEOUT (%s)", p.Timeout)
		}
		if err := p.Clock.Sleep(ctx, p.Poll); err != nil {
			return err.Error()
		}
	}
}

// pullRequest opens the pull request from from into into, or returns the
// open one.
func (p *Promoter) pullRequest(ctx context.Context, from, into, changelog string) (int, error) {
	prs, err := p.GitHub.PRs(ctx, from, "open")
	if err != nil {
		return 0, err
	}
	body := fmt.Sprintf("claudopilot promotes `%s` to `%s` (PROMOTE_TO). It is merged with a merge commit once its checks are green.\n\n%s", from, into, changelog)
	for _, pr := range prs {
		if pr.Base == into {
			// Its head followed the branch: the changelog is brought up
			// to date.
			return pr.Number, p.GitHub.SetPRBody(ctx, pr.Number, body)
		}
	}
	pr, err := p.GitHub.CreatePR(ctx, from, into, fmt.Sprintf("Promote %s to %s", from, into), body, false)
	if err != nil {
		return 0, err
	}
	return pr.Number, nil
}

var issueRef = regexp.MustCompile(`#(\d+)\b`)

// changelog lists what the promotion brings: the source's
// commits the target lacks (newest first, at most 200), and the issues
// they name.
func (p *Promoter) changelog(ctx context.Context, tip, head string) (string, error) {
	out, err := p.Git.Git(ctx, "log", "--format=%s", "-n", "200", tip+".."+head)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("## Changelog\n\n")
	seen := map[string]bool{}
	var refs []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		fmt.Fprintf(&b, "- %s\n", line)
		for _, m := range issueRef.FindAllString(line, -1) {
			if !seen[m] {
				seen[m] = true
				refs = append(refs, m)
			}
		}
	}
	if len(refs) > 0 {
		fmt.Fprintf(&b, "\nIssues and pull requests: %s\n", strings.Join(refs, ", "))
	}
	return b.String(), nil
}

// lastTried is when each step ("from\x00to") last ended promoted or red.
func (p *Promoter) lastTried() (map[string]time.Time, error) {
	rs, err := ReadLedger(p.Ledger)
	out := map[string]time.Time{}
	for _, r := range rs {
		out[r.From+"\x00"+r.To] = r.At
	}
	return out, err
}

func (p *Promoter) remote() string {
	if p.Remote == "" {
		return "origin"
	}
	return p.Remote
}

// tell logs a step's outcome: a promotion or a red step each time, a
// step current or waiting only when that is news (the loop asks at every
// poll). Called with p.mu held.
func (p *Promoter) tell(r Result) {
	line := fmt.Sprintf("promote %s → %s: %s", r.From, r.To, r.Kind)
	if r.Why != "" {
		line += ": " + r.Why
	}
	key := r.From + "\x00" + r.To
	if (r.Kind == Current || r.Kind == Waiting) && p.told[key] == line {
		return
	}
	if p.told == nil {
		p.told = map[string]string{}
	}
	p.told[key] = line
	p.logf("%s", line)
}

func (p *Promoter) logf(format string, args ...any) {
	if p.Log != nil {
		p.Log(format, args...)
	}
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
