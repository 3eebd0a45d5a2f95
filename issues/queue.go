package issues

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/claudopilot/claudopilot/protect"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/secret"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
	"github.com/claudopilot/claudopilot/worktree"
)

// Labels are the label names of the queue's state machine.
type Labels struct {
	Ready   string // READY_LABEL: queued, waiting for an instance
	Claim   string // CLAIM_LABEL: an instance works on it
	Blocked string // BLOCKED_LABEL: failed or invalid deps; a comment says why
	Review  string // REVIEW_LABEL: the pull request waits for a human merge
	// APPROVAL_LABEL: branch protection wants an approving review; the
	// driver merges once one appears (before CLAIM_STALE_HOURS).
	Approval string
}

// DefaultLabels are the default label names.
var DefaultLabels = Labels{Ready: "agent-ready", Claim: "agent-running", Blocked: "agent-blocked", Review: "user-merge-review", Approval: "agent-awaiting-approval"}

// Config configures a Queue. GitHub, Git and Base are required; zero
// values elsewhere take the documented defaults.
type Config struct {
	GitHub *GitHub
	// Git is the main worktree of the local clone, with the driver's own
	// environment (fetch and push use it). Agents, gates and the driver's
	// commits in worktrees use a copy without the token.
	Git    *worktree.Client
	Remote string // default "origin"
	Base   string // the branch pull requests go into ("": the repository's default branch, read by Start)

	Labels      Labels
	NewestFirst bool // ISSUE_ORDER=newest
	BatchSize   int  // issues read per poll (default 25)
	AutoMerge   bool
	MergeMethod string // auto (default: the first the repository allows of merge, squash, rebase), merge, squash, rebase
	// MergeMethodDefaulted: MERGE_METHOD was not set; its default changed
	// from merge to auto, which Start announces.
	MergeMethodDefaulted bool
	ClaimStale           time.Duration // CLAIM_STALE_HOURS (default 6h)
	// ForeignClaims (FOREIGN_CLAIM_LABELS) are other tools' claim labels
	// (issue-pilot's in-pilot, issue-orchestrator's agent-running): an
	// issue carrying one is worked by someone else, and is left alone.
	ForeignClaims  []string
	TrustedAuthors []string // authors whose issues are trusted whoever labelled them
	AgentEnvAllow  []string // variables kept in the agent's environment even if secret
	Token          string   // stripped from agents' environments and scrubbed

	// Gate, Agent, Supervisor, Prepare, the timeouts, LogCap, KillGrace
	// and RateLimitSleep are the run's: the engine's runner and reviewer
	// (from the one settings model) work the issues; the queue checks
	// AGENT_CMD only. How many agents run at once, how often a failed
	// attempt is repaired and retried, the sandbox and the review gate are
	// the scheduler's (engine.Open), for phases and issues alike.
	Gate       string
	Agent      string // AGENT_CMD (required)
	Supervisor string // default Agent
	// Lanes are LANES by lane id: an issue labelled "lane:<id>" of one
	// of them is pinned to that lane of the scheduler (docs/lanes.md); a
	// label naming none is logged. The scheduler's lanes themselves come
	// with the run (Wiring.Lanes).
	Lanes          map[string]LaneCmds
	Prepare        string
	Poll           time.Duration // default 60s
	CheckPoll      time.Duration // how often checks are read (default Poll)
	StuckTimeout   time.Duration
	AgentTimeout   time.Duration
	LogCap         int64
	KillGrace      time.Duration
	RateLimitSleep time.Duration // agent rate limit without a hint (default 1h)
	ChecksGrace    time.Duration // CHECKS_GRACE: "no checks" is green only this long after the head was pushed and marked ready (default 120s)
	ChecksTimeout  time.Duration // CHECKS_TIMEOUT: checks pending (or unreadable) this long after the push block the issue (default 2h)

	Env        []string // the driver's environment
	PromptDirs []string // folders that may hold issue-worker.md / issue-supervisor.md overrides
	Once       bool     // work the current queue, then return
	Instance   string   // default NewInstance()
	Clock      Clock    // default RealClock (claim ages, check polls and their grace and timeout; GitHub waits use the GitHub's own)
	Log        io.Writer
	// Protect is every file a branch must not change (package protect,
	// docs/landing.md): a branch that changes one is never pushed and the
	// issue is blocked with reason protected. Nil: the check cannot run,
	// and nothing is pushed.
	Protect *protect.Set
	// Phases returns the manifest side of the graph, read at every poll;
	// nil means no roadmap (a "Depends on phase-03" is then unknown).
	Phases func() ([]Phase, error)
	// CampaignPrefix is CAMPAIGN_LABEL_PREFIX (default "campaign:"): an
	// issue labelled <prefix><name> is the campaign's, worked before any
	// other ready issue, its agents given claudopilot/campaigns/<name>.md.
	CampaignPrefix string
	// ScannerLabel is SCANNER_LABEL: the scanners' proposals, which wait
	// for a maintainer's ready label ("": no refill).
	ScannerLabel string
	// Refill, when set, is told after each poll how many issues are
	// ready or proposed and unclaimed (package scanner's Refill.Low); it
	// must return at once.
	Refill func(ctx context.Context, waiting int)
}

// Queue works the issue queue of one repository. Run owns all of its
// state; workers report over a channel.
type Queue struct {
	cfg      Config
	gh       *GitHub
	git      *worktree.Client // without secrets: worktrees, commits, merges
	net      *worktree.Client // fetch, push: with the token as the remote's credential
	agentEnv []string
	scrub    *Scrubber
	instance string
	clock    Clock
	method   string // the merge method in use (pickMethod; MergeMethod until Start)
	logMu    sync.Mutex

	// The queue as the scheduler's landing strategy (outside.go).
	// phaseNodes: the manifest's phases are nodes of the scheduler this
	// queue feeds (run --issues), so an issue's phase deps are edges there;
	// otherwise the poll waits for them to be merged.
	phaseNodes bool
	landMu     sync.Mutex
	lands      map[int]*landing // issues between their claim and their end
	away       map[int]string   // issues that went away while worked on: why (goneAway)
	sumMu      sync.Mutex
	sum        Summary // what Land and Record recorded (Summary)
	trustMu    sync.Mutex
	trustSeen  map[int]readyEntry // readyBy's last reads
	books      books              // Record's and Land's bookkeeping on GitHub
}

// Outcome kinds a worker reports.
const (
	Merged      = "merged"      // the pull request was merged
	Review      = "review"      // the pull request is ready for review
	Blocked     = "blocked"     // BLOCKED_LABEL set, with a comment
	Lost        = "lost"        // another instance holds the claim
	Dropped     = "dropped"     // the issue or its pull request vanished
	Interrupted = "interrupted" // stopped; the claim was released
	Errored     = "error"       // a GitHub fault before the work began; tried again later
)

// Result is one issue's outcome in a run.
type Result struct {
	Number int
	Kind   string
	PR     int
	Reason string
}

// Summary is what a run did.
type Summary struct {
	Results  []Result
	Skipped  []int // ready issues not worked: not trusted
	Released []int // stale claims released
}

// Count returns how many results have kind.
func (s Summary) Count(kind string) int {
	n := 0
	for _, r := range s.Results {
		if r.Kind == kind {
			n++
		}
	}
	return n
}

// New checks the configuration and builds a Queue. It makes no request.
func New(cfg Config) (*Queue, error) {
	if cfg.GitHub == nil || cfg.Git == nil {
		return nil, errors.New("queue: GitHub and Git are required")
	}
	if strings.TrimSpace(cfg.Agent) == "" {
		return nil, errors.New("queue: AGENT_CMD is empty")
	}
	d := DefaultLabels
	for _, l := range []struct {
		dst *string
		def string
	}{{&cfg.Labels.Ready, d.Ready}, {&cfg.Labels.Claim, d.Claim}, {&cfg.Labels.Blocked, d.Blocked}, {&cfg.Labels.Review, d.Review}, {&cfg.Labels.Approval, d.Approval}} {
		if *l.dst == "" {
			*l.dst = l.def
		}
	}
	seen := map[string]bool{}
	for _, l := range []string{cfg.Labels.Ready, cfg.Labels.Claim, cfg.Labels.Blocked, cfg.Labels.Review, cfg.Labels.Approval} {
		if seen[strings.ToLower(l)] {
			return nil, fmt.Errorf("queue: label %q is used for two states", l)
		}
		seen[strings.ToLower(l)] = true
	}
	if cfg.Remote == "" {
		cfg.Remote = "origin"
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 25
	}
	if cfg.MergeMethod == "" {
		cfg.MergeMethod = "auto"
	}
	switch cfg.MergeMethod {
	case "auto", "merge", "squash", "rebase":
	default:
		return nil, fmt.Errorf("queue: MERGE_METHOD %q: want auto, merge, squash or rebase", cfg.MergeMethod)
	}
	if cfg.ClaimStale <= 0 {
		cfg.ClaimStale = 6 * time.Hour
	}
	if cfg.Supervisor == "" {
		cfg.Supervisor = cfg.Agent
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Minute
	}
	if cfg.CheckPoll <= 0 {
		cfg.CheckPoll = cfg.Poll
	}
	if cfg.ChecksGrace <= 0 {
		cfg.ChecksGrace = 120 * time.Second
	}
	if cfg.ChecksTimeout <= 0 {
		cfg.ChecksTimeout = 2 * time.Hour
	}
	if cfg.RateLimitSleep <= 0 {
		cfg.RateLimitSleep = time.Hour
	}
	if cfg.Instance == "" {
		cfg.Instance = NewInstance()
	}
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	q := &Queue{cfg: cfg, gh: cfg.GitHub, instance: cfg.Instance, clock: cfg.Clock, method: cfg.MergeMethod}
	// The funnel the GitHub client scrubs with (the driver's), knowing
	// the token too, and each installation token made later.
	q.scrub = cfg.GitHub.scrub
	q.scrub.Add(cfg.Token)
	q.agentEnv = AgentEnv(cfg.Env, cfg.Token, cfg.AgentEnvAllow)
	q.git = cfg.Git.WithEnv(q.agentEnv)
	// The driver's git never holds the token in its environment (any
	// process of the user reads that): fetch and push get it over a pipe.
	q.net = cfg.Git.WithCredential(q.gh.Credential)
	return q, nil
}

// known is the driver's own secrets a push must not carry: the token,
// and the funnel's other values.
func (q *Queue) known() *secret.Redactor { return q.scrub.Redactor() }

// Base is the branch pull requests go into (known after Start).
func (q *Queue) Base() string { return q.cfg.Base }

// Instance is this queue's instance name, as its claim comments say.
func (q *Queue) Instance() string { return q.instance }

// AgentEnv is the environment agents, gates and prepare commands get: the
// one rule of run and queue (work.AgentEnv), with the queue's token.
func AgentEnv(env []string, token string, allow []string) []string {
	return work.AgentEnv(env, allow, token)
}

// logf writes one scrubbed, timestamped progress line.
func (q *Queue) logf(format string, args ...any) {
	line := q.scrub.Scrub(fmt.Sprintf(format, args...))
	q.logMu.Lock()
	defer q.logMu.Unlock()
	fmt.Fprintf(q.cfg.Log, "%s %s\n", time.Now().Format("15:04:05"), line)
}

// Start prepares the repository side: the token's login, the labels
// (missing ones created, existing ones never touched) and the worktree
// folder's exclude line. Run calls it; it is exported for a combined run
// that wants the labels before its first poll.
func (q *Queue) Start(ctx context.Context) error {
	login, err := q.gh.Login(ctx)
	if err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	if login != "" {
		q.logf("acting as %s", login)
	}
	if q.cfg.Base == "" {
		if q.cfg.Base, err = q.gh.DefaultBranch(ctx); err != nil {
			return fmt.Errorf("queue: %w", err)
		}
	}
	created, err := q.gh.EnsureLabels(ctx, labelSpecs(q.cfg.Labels, q.cfg.ScannerLabel))
	if err != nil {
		return fmt.Errorf("queue: labels: %w", err)
	}
	for _, c := range created {
		q.logf("created label %s", c)
	}
	if err := q.git.Exclude(ctx, "/.claudopilot/"); err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	return q.pickMethod(ctx)
}

// labelSpecs are the labels the queue creates when missing. Their colours
// are issue-orchestrator's for the label of the same role (issue 26), so a
// repository that moves from it keeps one colour per meaning: its agent
// label queues an issue (1D76DB), in-progress (5319E7), blocked (B60205),
// needs-human (FBCA04: a PR that waits for a human merge is the human's
// move), needs-code-review (7057FF). Source: issue-orchestrator/
// issue-orchestrator, plan_setup_labels in
// src/issue_orchestrator/entrypoints/setup_wizard_common.py. A label that
// exists is never changed (EnsureLabels).
func labelSpecs(l Labels, scanner string) []LabelSpec {
	specs := []LabelSpec{
		{l.Ready, "1d76db", "claudopilot: queued for an agent"},
		{l.Claim, "5319e7", "claudopilot: an agent is working on it"},
		{l.Blocked, "b60205", "claudopilot: blocked; see the last comment"},
		{l.Review, "fbca04", "claudopilot: pull request waits for a human merge"},
		{l.Approval, "7057ff", "claudopilot: pull request waits for an approving review"},
	}
	if scanner != "" {
		specs = append(specs, LabelSpec{scanner, "c5def5", "claudopilot: proposed by a scanner; a maintainer queues it"})
	}
	return specs
}

// mergeMethod is the merge method in use ("merge" before Start resolved
// auto).
func (q *Queue) mergeMethod() string {
	q.landMu.Lock()
	defer q.landMu.Unlock()
	if q.method == "auto" || q.method == "" {
		return "merge"
	}
	return q.method
}

func (q *Queue) setMergeMethod(m string) {
	q.landMu.Lock()
	defer q.landMu.Unlock()
	q.method = m
}

// methods is the merge method order MERGE_METHOD=auto picks from.
var methods = []string{"merge", "squash", "rebase"}

// pickMethod resolves MERGE_METHOD against what the repository allows: auto
// takes the first allowed of merge, squash, rebase (merge when GitHub does
// not say: a refusal then teaches the next, mergeWith); an explicit method
// the repository refuses is named at start. The default's change (merge to
// auto) is announced until MERGE_METHOD is set.
func (q *Queue) pickMethod(ctx context.Context) error {
	m, refused, err := PickMergeMethod(ctx, q.gh, q.cfg.MergeMethod)
	if err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	if refused != "" {
		q.logf("%s", refused)
	}
	q.setMergeMethod(m)
	if q.cfg.MergeMethodDefaulted {
		q.logf("%s", DefaultMethodNote(m))
	}
	return nil
}

// PickMergeMethod resolves MERGE_METHOD want against what the repository
// allows: auto takes the first allowed of merge, squash, rebase (merge when
// GitHub does not say; a refusal then teaches the next). For an explicit
// method the repository refuses, refused says so in a sentence (the queue
// logs it at start, doctor reports it).
func PickMergeMethod(ctx context.Context, gh *GitHub, want string) (use, refused string, err error) {
	allowed, known, err := gh.MergeMethods(ctx)
	if err != nil {
		return "", "", err
	}
	var ok []string
	for _, m := range methods {
		if allowed[m] {
			ok = append(ok, m)
		}
	}
	switch {
	case want == "auto" && known && len(ok) > 0:
		return ok[0], "", nil
	case want == "auto" || want == "":
		return "merge", "", nil
	case known && !allowed[want]:
		return want, fmt.Sprintf("MERGE_METHOD=%s: the repository does not allow %s merges (it allows: %s); its merges will be refused: set MERGE_METHOD=auto or one of those", want, want, strings.Join(ok, ", ")), nil
	}
	return want, "", nil
}

// DefaultMethodNote announces MERGE_METHOD's changed default (merge to
// auto), until MERGE_METHOD is set.
func DefaultMethodNote(use string) string {
	return fmt.Sprintf("MERGE_METHOD now defaults to auto (was merge): merging with %s, the first the repository allows of merge, squash, rebase; set MERGE_METHOD to choose", use)
}

type pollState struct {
	skipLogged map[int]string
	waitLogged map[int]string
	ready      []*Issue // the last poll's ready issues (for the refill's count)
}

// poll reads the queue once, releases stale claims and blocks issues with
// bad deps. It returns the eligible issues as the scheduler's nodes: an
// issue waits in the graph on queued issues (and issues this driver
// holds) and on phases; on other issues and repositories it waits here,
// offered once they are done. h tells the issues this driver holds and
// takes back the claims an earlier run of this clone left (releaseStale):
// those are offered first, marked Resume.
func (q *Queue) poll(ctx context.Context, st *pollState, h pollHooks) ([]scheduler.OutsideNode, error) {
	r := &pollRound{held: h.held, byNum: map[int]*Issue{}, ext: map[int]IssueState{}, other: map[string]IssueState{}}
	resumed, err := q.takeBackClaims(ctx, h, r)
	if err != nil {
		return nil, err
	}
	ready, err := q.gh.OpenIssues(ctx, q.cfg.Labels.Ready, q.cfg.NewestFirst, q.cfg.BatchSize)
	if err != nil {
		return nil, err
	}
	st.ready = ready
	if q.cfg.Phases != nil {
		if r.phases, err = q.cfg.Phases(); err != nil {
			return nil, fmt.Errorf("roadmap: %w", err)
		}
	}
	q.admit(ctx, st, r, ready)
	q.readDeps(ctx, r)
	probs := q.depProblems(r)
	merged := map[string]bool{}
	for _, p := range r.phases {
		merged[p.ID] = p.Merged
	}
	var out []scheduler.OutsideNode
	for _, nd := range r.nodes {
		is := r.byNum[nd.N]
		if ps := probs[nd.N]; len(ps) > 0 {
			if err := q.blockDeps(ctx, is, ps); err != nil && !errors.Is(err, ErrNotFound) {
				r.errs = append(r.errs, fmt.Errorf("#%d: block: %w", nd.N, err))
				continue
			}
			q.logf("#%d: blocked: %s", nd.N, strings.Join(ps, "; "))
			q.addResult(Result{Number: nd.N, Kind: Blocked, Reason: strings.Join(ps, "; ")})
			continue
		}
		deps, waits := q.depsOf(r, nd, merged)
		if len(waits) > 0 {
			w := strings.Join(waits, ", ")
			if st.waitLogged[nd.N] != w {
				q.logf("#%d: waits on %s", nd.N, w)
				st.waitLogged[nd.N] = w
			}
			continue
		}
		delete(st.waitLogged, nd.N)
		node := q.node(is, deps)
		q.campaign(ctx, is, &node)
		out = append(out, node)
	}
	// A campaign's issues first (the scheduler orders by Priority too).
	slices.SortStableFunc(out, func(a, b scheduler.OutsideNode) int { return b.Priority - a.Priority })
	return append(resumed, out...), errors.Join(r.errs...)
}

// pollRound is what one poll learns as it goes.
type pollRound struct {
	held   func(n int) bool // held when the poll began
	phases []Phase
	nodes  []graphNode        // the ready issues admitted, with their deps
	byNum  map[int]*Issue     // the admitted issues by number
	ext    map[int]IssueState // issues the deps name outside the queue
	other  map[string]IssueState
	errs   []error // what went wrong with single issues; the poll goes on
}

// takeBackClaims goes through the claimed issues this driver does not
// hold: releases stale claims, and takes back (Resume) those an earlier
// run of this clone left.
func (q *Queue) takeBackClaims(ctx context.Context, h pollHooks, r *pollRound) ([]scheduler.OutsideNode, error) {
	claimed, err := q.gh.OpenIssues(ctx, q.cfg.Labels.Claim, q.cfg.NewestFirst, q.cfg.BatchSize)
	if err != nil {
		return nil, err
	}
	var resumed []scheduler.OutsideNode
	for _, is := range claimed {
		if h.held(is.Number) {
			continue
		}
		released, holder, resume, round, err := q.releaseStale(ctx, is, h.live, h.mine)
		if resume && err == nil {
			if h.adopt(ctx, is.Number, round) {
				q.logf("#%d: claimed by this clone (%s) in a run that did not end it: resumed", is.Number, q.instance)
				nd := q.node(is, nil) // its deps were done when it was claimed
				nd.Resume = true
				resumed = append(resumed, nd)
			}
			continue
		}
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			r.errs = append(r.errs, fmt.Errorf("#%d: stale claim check: %w", is.Number, err))
		case released && holder != "":
			q.logf("#%d: released the stale claim of %s", is.Number, holder)
			q.noteReleased(is.Number)
		case released:
			q.logf("#%d: %s without a claim comment for %s: back to %s", is.Number, q.cfg.Labels.Claim, q.cfg.ClaimStale, q.cfg.Labels.Ready)
			q.noteReleased(is.Number)
		}
	}
	return resumed, nil
}

// admit takes into r the ready issues that are not held, not claimed
// (by this tool or another) and trusted, with their deps; a skip is logged
// once per reason.
func (q *Queue) admit(ctx context.Context, st *pollState, r *pollRound, ready []*Issue) {
	isPhase := func(id string) bool {
		for _, p := range r.phases {
			if p.ID == id {
				return true
			}
		}
		return false
	}
	for _, is := range ready {
		if r.held(is.Number) || is.HasLabel(q.cfg.Labels.Claim) {
			continue
		}
		if l := q.foreignLabel(is); l != "" {
			if why := "claimed by another tool (" + l + ")"; st.skipLogged[is.Number] != why {
				q.logf("#%d: skipped, %s", is.Number, why)
				st.skipLogged[is.Number] = why
			}
			continue
		}
		ok, why, err := q.trusted(ctx, is)
		if err != nil {
			if !errors.Is(err, ErrNotFound) {
				r.errs = append(r.errs, fmt.Errorf("#%d: trust check: %w", is.Number, err))
			}
			continue
		}
		if !ok {
			if st.skipLogged[is.Number] != why {
				q.logf("#%d: skipped, not trusted: %s", is.Number, why)
				st.skipLogged[is.Number] = why
				q.noteSkipped(is.Number)
			}
			continue
		}
		delete(st.skipLogged, is.Number)
		r.nodes = append(r.nodes, graphNode{N: is.Number, Deps: ParseDeps(is.Body, isPhase).Local(q.gh.owner, q.gh.repo)})
		r.byNum[is.Number] = is
	}
}

// readDeps reads the state of the issues the deps name outside the queue
// (do they exist, are they done?) and of other repositories' issues (read
// through the API, they are leaves of the graph: their own deps are not
// ours to follow). An unreadable one counts as existing, not done.
func (q *Queue) readDeps(ctx context.Context, r *pollRound) {
	for _, nd := range r.nodes {
		for _, d := range nd.Deps.Issues {
			if _, in := r.byNum[d]; in || d == nd.N || r.held(d) {
				continue
			}
			if _, done := r.ext[d]; done {
				continue
			}
			s, err := q.gh.issueState(ctx, d)
			if err != nil {
				r.errs = append(r.errs, fmt.Errorf("#%d: dependency #%d: %w", nd.N, d, err))
				s = IssueState{Exists: true, Why: "unreadable"}
			}
			r.ext[d] = s
		}
	}
	for _, nd := range r.nodes {
		for _, ref := range nd.Deps.External {
			if _, done := r.other[ref.String()]; done {
				continue
			}
			s, err := q.gh.RefState(ctx, ref)
			if err != nil {
				r.errs = append(r.errs, fmt.Errorf("#%d: dependency %s: %w", nd.N, ref, err))
				s = IssueState{Exists: true, Why: "unreadable"}
			}
			r.other[ref.String()] = s
		}
	}
}

// depProblems returns, by issue, what is wrong with its deps: cycles,
// unknown issues or phases (graphProblems), unknown issues of other
// repositories.
func (q *Queue) depProblems(r *pollRound) map[int][]string {
	exists := map[int]bool{}
	for n, s := range r.ext {
		exists[n] = s.Exists
	}
	for _, nd := range r.nodes {
		for _, d := range nd.Deps.Issues {
			if r.held(d) {
				exists[d] = true // ours, in the scheduler's graph
			}
		}
	}
	probs := graphProblems(r.nodes, r.phases, exists)
	for _, nd := range r.nodes {
		for _, ref := range nd.Deps.External {
			if !r.other[ref.String()].Exists {
				probs[nd.N] = append(probs[nd.N], fmt.Sprintf("issue %s depends on unknown issue %q (not found, or not readable with this token)", IssueID(nd.N), ref.String()))
			}
		}
	}
	return probs
}

// depsOf splits an issue's deps into those that are nodes of the
// scheduler's graph (deps) and those it waits on here, not done yet
// (waits, each with why).
func (q *Queue) depsOf(r *pollRound, nd graphNode, merged map[string]bool) (deps, waits []string) {
	for _, d := range nd.Deps.Issues {
		if _, in := r.byNum[d]; in || r.held(d) {
			deps = append(deps, IssueID(d))
		} else if s := r.ext[d]; !s.Done {
			waits = append(waits, IssueID(d)+" ("+s.Why+")")
		}
	}
	for _, p := range nd.Deps.Phases {
		switch {
		case q.phaseNodes:
			deps = append(deps, p) // the phase is a node of the same graph
		case !merged[p]:
			waits = append(waits, p+" (not merged)")
		}
	}
	for _, ref := range nd.Deps.External {
		if s := r.other[ref.String()]; !s.Done {
			waits = append(waits, ref.String()+" ("+s.Why+")")
		}
	}
	return deps, waits
}

// pollHooks is what a poll asks of the Source about this driver's claims.
type pollHooks struct {
	held  func(n int) bool // held when the poll began
	live  func(n int) bool // held now
	mine  func(n int) bool // claimed, tried or resumed in this run
	adopt func(ctx context.Context, n int, round int64) bool
}

// trusted reports whether issue is is trusted: its author is in
// TRUSTED_AUTHORS, or READY_LABEL was last applied by a user with write
// access.
//
// The driver's own account is no maintainer of the issues it filed (a
// scanner's proposals): its own ready label on one of them does not
// count, nor does TRUSTED_AUTHORS naming it, so a scanner's text reaches
// a worker only after a maintainer's look.
func (q *Queue) trusted(ctx context.Context, is *Issue) (bool, string, error) {
	self := q.gh.Self()
	own := self != "" && strings.EqualFold(is.Author, self)
	for _, a := range q.cfg.TrustedAuthors {
		if !own && strings.EqualFold(strings.TrimSpace(a), is.Author) {
			return true, "", nil
		}
	}
	who, err := q.readyBy(ctx, is)
	if err != nil {
		return false, "", err
	}
	if who == "" {
		return false, fmt.Sprintf("no event shows who applied %s", q.cfg.Labels.Ready), nil
	}
	if own && strings.EqualFold(who, self) {
		return false, fmt.Sprintf("%s was applied by %s, the driver's own account, to an issue it filed: a maintainer must add it", q.cfg.Labels.Ready, who), nil
	}
	ok, err := q.gh.HasWrite(ctx, who)
	if err != nil {
		return false, "", err
	}
	if !ok {
		return false, fmt.Sprintf("%s was applied by %s, who has no write access, and the author %s is not in TRUSTED_AUTHORS", q.cfg.Labels.Ready, who, is.Author), nil
	}
	return true, "", nil
}

// readyBy returns who last applied READY_LABEL to is, reading the
// issue's events only when the issue changed (its labels, or its
// updated_at, which any label event moves) since they were last read:
// an idle poll reads no events (docs/queue.md, "The poll's cost").
func (q *Queue) readyBy(ctx context.Context, is *Issue) (string, error) {
	key := strings.ToLower(strings.Join(slices.Sorted(slices.Values(is.Labels)), "\x00"))
	q.trustMu.Lock()
	e, ok := q.trustSeen[is.Number]
	q.trustMu.Unlock()
	if ok && !is.UpdatedAt.IsZero() && e.updated.Equal(is.UpdatedAt) && e.labels == key {
		return e.who, nil
	}
	who, _, err := q.gh.LabeledBy(ctx, is.Number, q.cfg.Labels.Ready)
	if err != nil {
		return "", err
	}
	q.trustMu.Lock()
	if q.trustSeen == nil {
		q.trustSeen = map[int]readyEntry{}
	}
	q.trustSeen[is.Number] = readyEntry{updated: is.UpdatedAt, labels: key, who: who}
	q.trustMu.Unlock()
	return who, nil
}

// readyEntry is who applied READY_LABEL to an issue, as read when the
// issue had these labels and this updated_at.
type readyEntry struct {
	updated time.Time
	labels  string
	who     string
}

// blockDeps blocks an issue whose deps are invalid: one comment saying
// why, BLOCKED_LABEL on, READY_LABEL off.
func (q *Queue) blockDeps(ctx context.Context, is *Issue, problems []string) error {
	var b strings.Builder
	b.WriteString("claudopilot cannot work on this issue: its dependencies are invalid.\n\n")
	for _, p := range problems {
		fmt.Fprintf(&b, "- %s\n", p)
	}
	fmt.Fprintf(&b, "\nFix the \"Depends on\" lines (or the Dependencies list), then remove `%s` and add `%s`.", q.cfg.Labels.Blocked, q.cfg.Labels.Ready)
	if _, err := q.gh.PostComment(ctx, is.Number, b.String()); err != nil {
		return err
	}
	if err := q.gh.AddLabels(ctx, is.Number, q.cfg.Labels.Blocked); err != nil {
		return err
	}
	return q.gh.RemoveLabel(ctx, is.Number, q.cfg.Labels.Ready)
}

// The queue's files are placed by the one layout (package state) under
// the issue's graph id "#n", which no phase id escapes to: a phase whose
// id is issue-n keeps its own worktree, logs and sandbox.

// layout is the repository's layout.
func (q *Queue) layout() state.Layout { return state.Layout{Top: q.git.Dir} }

// WorktreePath is issue n's worktree.
func (q *Queue) WorktreePath(n int) string { return q.layout().Worktree(IssueID(n)) }

// LogDir is where issue n's logs go.
func (q *Queue) LogDir(n int) string { return q.layout().LogDir(IssueID(n)) }

// SandboxDir is issue n's sandbox state folder.
func (q *Queue) SandboxDir(n int) string { return q.layout().SandboxDir(IssueID(n)) }

// oldWorktreePath is where versions before the one layout put issue n's
// worktree; a worktree found there is moved.
func (q *Queue) oldWorktreePath(n int) string {
	return filepath.Join(q.git.Dir, ".claudopilot", "worktrees", fmt.Sprintf("issue-%d", n))
}

// LaneCmds are one lane's agent and supervisor commands.
type LaneCmds struct{ Agent, Supervisor string }

// LaneLabel is the label prefix that picks an issue's lane.
const LaneLabel = "lane:"

// laneOf returns the lane an issue's "lane:<id>" label names and its
// commands; ok is false without such a label or for a lane not in LANES
// (named, so it can be reported).
func (c *Config) laneOf(is *Issue) (id string, cmds LaneCmds, ok bool) {
	for _, l := range is.Labels {
		if len(l) <= len(LaneLabel) || !strings.EqualFold(l[:len(LaneLabel)], LaneLabel) {
			continue
		}
		id = strings.TrimSpace(l[len(LaneLabel):])
		for k, v := range c.Lanes {
			if strings.EqualFold(k, id) {
				return k, v, true
			}
		}
		return id, LaneCmds{}, false
	}
	return "", LaneCmds{}, false
}
