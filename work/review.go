package work

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/prompts"
	"github.com/claudopilot/claudopilot/review"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/sandbox"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/secret"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// Reviewer implements scheduler.Reviewer: it runs REVIEW_CMD in a
// read-only, detached checkout of the gated tip and accepts a verdict only
// from that process's own output, bound to the live fingerprint.
type Reviewer struct {
	Git     *worktree.Client
	Layout  state.Layout
	Cmd     string   // REVIEW_CMD
	Env     []string // the driver's environment; the contract's variables are added
	Prompts prompts.Set
	Redact  *secret.Redactor // the redaction funnel, for the reviewer's log

	StuckTimeout time.Duration
	Timeout      time.Duration
	LogCap       int64
	KillGrace    time.Duration
	// Sandbox confines the reviewer (no ref writes); nil: as it is.
	Sandbox *sandbox.Config
	// Inputs, when set, supplies what is reviewed instead of the phase's
	// branch, base, doc and manifest line: a node from outside the
	// manifest, whose source reads them live (the issue queue: the pull
	// request's head and body, the base's tip on the remote, the issue's
	// body).
	Inputs func(ctx context.Context, id string) (ReviewInputs, error)
}

var _ scheduler.Reviewer = (*Reviewer)(nil)

// ReviewInputs are what a reviewer of a node from outside the manifest
// reads, as its source supplies them. The fingerprint binds Head, Base,
// Doc and Line, as a phase's binds its doc and manifest line.
type ReviewInputs struct {
	Head, Base string // the head under review (a local commit) and the base's tip
	BaseBranch string
	Doc        []byte // the node's doc (an issue's body)
	Line       string // in place of the manifest line (a pull request's body)
	PR         int    // the pull request under review
}

// ReviewDir holds the reviewers' checkouts.
func ReviewDir(l state.Layout) string { return filepath.Join(l.Dir(), "review") }

// inputs are what a fingerprint is computed from.
type inputs struct {
	head, base string
	doc        []byte
	docRel     string // the doc's path at head (DONE_ once renamed); "": a node's, written to a file
	line       string // the phase's manifest line, without newline
	outside    *ReviewInputs
}

func (in inputs) fingerprint() string { return review.Fingerprint(in.head, in.base, in.doc, in.line) }

// read takes the fingerprint's inputs from the live refs and the live
// manifest: the branch tip, the base tip, the doc as committed at that tip,
// the phase's line as the manifest says it now.
func (r *Reviewer) read(ctx context.Context, j scheduler.ReviewJob) (inputs, error) {
	var in inputs
	var err error
	if r.Inputs != nil {
		o, err := r.Inputs(ctx, j.ID)
		if err != nil {
			return in, fmt.Errorf("review %s: %w", j.ID, err)
		}
		return inputs{head: o.Head, base: o.Base, doc: o.Doc, line: o.Line, outside: &o}, nil
	}
	if in.head, err = r.Git.RevParse(ctx, "refs/heads/"+r.Layout.Branch(j.ID)); err != nil {
		return in, fmt.Errorf("review %s: branch: %w", j.ID, err)
	}
	if in.base, err = r.Git.RevParse(ctx, "refs/heads/"+r.Layout.Base); err != nil {
		return in, fmt.Errorf("review %s: base: %w", j.ID, err)
	}
	for _, name := range []string{roadmap.DonePrefix + j.Doc, j.Doc} {
		rel := r.Layout.DocRel(name)
		b, has, err := r.Git.ReadFile(ctx, in.head, rel)
		if err != nil {
			return in, fmt.Errorf("review %s: doc: %w", j.ID, err)
		}
		if has {
			in.doc, in.docRel = b, rel
			break
		}
	}
	if in.docRel == "" {
		return in, fmt.Errorf("review %s: the head %s has no phase doc %s", j.ID, in.head, j.Doc)
	}
	src, err := os.ReadFile(filepath.Join(r.Layout.Top, filepath.FromSlash(r.Layout.ManifestRel())))
	if err != nil {
		return in, fmt.Errorf("review %s: manifest: %w", j.ID, err)
	}
	m, _ := manifest.Parse(src)
	var p *manifest.Phase
	if m != nil {
		p = m.Phase(j.ID)
	}
	lines := strings.Split(string(src), "\n")
	if p == nil || p.Line < 1 || p.Line > len(lines) {
		return in, fmt.Errorf("review %s: the manifest has no line for it now", j.ID)
	}
	in.line = strings.TrimSuffix(lines[p.Line-1], "\r")
	return in, nil
}

// Review runs one reviewer and judges its output.
func (r *Reviewer) Review(ctx context.Context, j scheduler.ReviewJob) scheduler.ReviewOutcome {
	o := scheduler.ReviewOutcome{ID: j.ID, Index: j.Index}
	none := func(err error) scheduler.ReviewOutcome {
		o.Err = err
		o.Verdict = review.Verdict{Kind: review.None, Why: err.Error()}
		noteInLog(o.LogPath, "claudopilot: no verdict: "+err.Error())
		return o
	}
	in, err := r.read(ctx, j)
	if err != nil {
		return none(err)
	}
	dir := r.Layout.LogDir(j.ID)
	n, promptFile, err := ReserveReview(dir)
	if err != nil {
		return none(err)
	}
	o.Run = n
	o.LogPath = r.Layout.LogPath(j.ID, string(state.ReviewerRole), n)
	f, err := r.writeFiles(ctx, filepath.Join(dir, fmt.Sprintf("reviewer-%d", n)), in)
	if err != nil {
		return none(err)
	}
	rp, err := r.process(j, in, f, n, promptFile, o.LogPath)
	if err != nil {
		return none(err)
	}
	out, res, err := rp.Run(ctx)
	o.Usage, _ = usageOf(o.LogPath, 0) // its own fresh log: this run's spend (skipped costs noted in it)
	if !res.Started.IsZero() && res.Reason != proc.ReasonStart {
		o.Usage.Sessions = 1 // a reviewer process started (PHASE_MAX_SESSIONS)
	}
	if ctx.Err() != nil {
		o.Verdict = review.Verdict{Kind: review.None, Why: "interrupted"}
		noteInLog(o.LogPath, "claudopilot: no verdict: interrupted")
		return o
	}
	if err != nil {
		return none(err)
	}
	// Recompute the fingerprint now, from the live refs and files: a
	// verdict on a tree that has since moved is no verdict on this one.
	live, err := r.read(ctx, j)
	if err != nil {
		return none(err)
	}
	o.Head, o.Base, o.Fingerprint = live.head, live.base, live.fingerprint()
	v := review.Accept(review.Parse(out), review.Want{Phase: j.ID, Fingerprint: o.Fingerprint, Head: live.head, Base: live.base, PR: live.pr()})
	if v.Kind == review.None && o.Fingerprint != in.fingerprint() {
		v.Why = "stale: " + staleWhat(in, live) + " changed while the reviewer ran"
	}
	v = rp.Judge(v, res)
	o.Verdict = v
	note := "claudopilot: verdict " + v.Kind.String()
	if v.Why != "" {
		note += ": " + v.Why
	}
	noteInLog(o.LogPath, note+" (fingerprint "+o.Fingerprint+")")
	return o
}

// pr is the pull request under review (0 for a phase).
func (in inputs) pr() int {
	if in.outside == nil {
		return 0
	}
	return in.outside.PR
}

// reviewFiles are what one reviewer reads beside its checkout.
type reviewFiles struct {
	doc  string // the doc: its path in the checkout, or a file for a node's
	line string // the manifest line (a pull request's body)
	diff string
}

// writeFiles writes the reviewer's files next to its log (stem names
// them): the manifest line, the diff, and a node's doc.
func (r *Reviewer) writeFiles(ctx context.Context, stem string, in inputs) (reviewFiles, error) {
	f := reviewFiles{doc: in.docRel, line: stem + ".manifest-line", diff: stem + ".diff"}
	if in.outside != nil {
		f.doc = stem + ".doc.md"
		if err := os.WriteFile(f.doc, in.doc, 0o644); err != nil {
			return f, err
		}
	}
	if err := os.WriteFile(f.line, []byte(in.line), 0o644); err != nil {
		return f, err
	}
	diff, err := r.Git.DiffSince(ctx, in.base, in.head)
	if err != nil {
		return f, err
	}
	return f, os.WriteFile(f.diff, []byte(diff+"\n"), 0o644)
}

// process is reviewer run n of job j: its prompt and its environment.
func (r *Reviewer) process(j scheduler.ReviewJob, in inputs, f reviewFiles, n int, promptFile, logPath string) (ReviewProcess, error) {
	dir := r.Layout.LogDir(j.ID)
	fp := in.fingerprint()
	checkout := r.Layout.ReviewCheckout(j.ID, n)
	lens := strings.Join(j.Lenses, ",")
	gateLog := ""
	if k := proc.NextLog(dir, "gate") - 1; k > 0 {
		gateLog = r.Layout.LogPath(j.ID, "gate", k)
	}
	gate := j.Gate
	if gate == "" {
		gate = "true"
	}
	gateText, baseBranch := gate, r.Layout.Base
	var extra []string
	if o := in.outside; o != nil {
		gateText, baseBranch = gate+" (and the pull request's checks)", o.BaseBranch
		extra = append(extra, "CLAUDOPILOT_REVIEW_PR="+strconv.Itoa(o.PR))
	}
	example := review.Marker{Fingerprint: fp, Phase: j.ID, Head: in.head, Base: in.base, Verdict: review.Pass, Findings: []string{}, PR: in.pr()}
	prompt, err := r.Prompts.Render("reviewer", prompts.ReviewData{
		ID: j.ID, Title: j.Title, Round: j.Round, Lens: lens, Doc: f.doc, Checkout: checkout,
		Head: in.head, Base: in.base, BaseBranch: baseBranch, Diff: f.diff, Gate: gateText, GateLog: gateLog,
		Fingerprint: fp, ManifestLine: f.line, Marker: example.Line(), PR: in.pr(),
	})
	if err != nil {
		return ReviewProcess{}, err
	}
	return ReviewProcess{
		Git: r.Git, Checkout: checkout, Head: in.head, Cmd: r.Cmd, Prompt: prompt, PromptFile: promptFile, LogPath: logPath,
		LogCap: r.LogCap, Redact: r.Redact, StuckTimeout: r.StuckTimeout, Timeout: r.Timeout, KillGrace: r.KillGrace,
		Sandbox: r.Sandbox, Show: []string{dir},
		Env: ReviewEnv(r.Env, append([]string{
			"CLAUDOPILOT_ROLE=" + string(state.ReviewerRole),
			"CLAUDOPILOT_PHASE=" + j.ID,
			"CLAUDOPILOT_PHASE_DOC=" + f.doc,
			"CLAUDOPILOT_BASE=" + baseBranch,
			"CLAUDOPILOT_GATE=" + gate,
			"CLAUDOPILOT_PROMPT_FILE=" + promptFile,
			"CLAUDOPILOT_REVIEW_FINGERPRINT=" + fp,
			"CLAUDOPILOT_REVIEW_HEAD=" + in.head,
			"CLAUDOPILOT_REVIEW_BASE=" + in.base,
			"CLAUDOPILOT_MANIFEST_LINE_FILE=" + f.line,
			"CLAUDOPILOT_REVIEW_LENS=" + lens,
			"CLAUDOPILOT_REVIEW_ROUND=" + strconv.Itoa(j.Round),
			"CLAUDOPILOT_REVIEW_DIFF=" + f.diff,
		}, extra...)...),
	}, nil
}

func staleWhat(a, b inputs) string {
	var what []string
	if a.head != b.head {
		what = append(what, "the branch")
	}
	if a.base != b.base {
		what = append(what, "the base")
	}
	if string(a.doc) != string(b.doc) {
		what = append(what, "the phase doc")
	}
	if a.line != b.line {
		what = append(what, "the manifest line")
	}
	return strings.Join(what, " and ")
}

// ReserveReview takes the next free reviewer run number in dir by creating
// its prompt file (reviewer-<n>.prompt.md) exclusively, so reviewers of one
// phase running at once never share a log, and removes any reviewer-<n>.log
// left there.
func ReserveReview(dir string) (int, string, error) { return ReserveRun(dir, "reviewer") }

// ReserveRun is ReserveReview for any read-only run named role (a
// reviewer, a scanner): <role>-<n>.prompt.md and <role>-<n>.log in dir.
func ReserveRun(dir, role string) (int, string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, "", err
	}
	for n := proc.NextLog(dir, role); ; n++ {
		p := filepath.Join(dir, fmt.Sprintf("%s-%d.prompt.md", role, n))
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return 0, "", err
		}
		f.Close()
		// A log of that number (a run whose prompt file went) is not
		// this run's output.
		if err := os.Remove(filepath.Join(dir, fmt.Sprintf("%s-%d.log", role, n))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, "", err
		}
		return n, p, nil
	}
}

// readOnly takes write permission off everything in a checkout but its
// .git link, so a reviewer cannot change the tree it judges by accident.
func readOnly(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == filepath.Join(dir, ".git") || d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		// A directory without write permission can still be read, so
		// the walk goes on below it.
		return os.Chmod(p, info.Mode().Perm()&^0o222)
	})
}

// ReviewProcess is one reviewer process: run in a read-only, detached
// checkout of Head made for it at Checkout, output to a log of its own.
type ReviewProcess struct {
	Git        *worktree.Client
	Checkout   string
	Head       string
	Cmd        string
	Env        []string
	Prompt     []byte
	PromptFile string
	LogPath    string // must not exist yet: the output is this run's alone
	Redact     *secret.Redactor

	LogCap       int64
	StuckTimeout time.Duration
	Timeout      time.Duration
	KillGrace    time.Duration

	// Sandbox confines the reviewer (no ref writes; nil: as it is), with
	// Show (the folder of its prompt, diff and manifest line) read-only.
	Sandbox *sandbox.Config
	Show    []string
}

// Run makes the checkout, runs the reviewer in it, removes it, and returns
// the reviewer's own output (its log) and how it ended. Markers are read
// from nowhere else: never from a file on the branch.
func (p ReviewProcess) Run(ctx context.Context) ([]byte, proc.Result, error) {
	var res proc.Result
	if err := p.Git.AddDetached(ctx, p.Checkout, p.Head); err != nil {
		return nil, res, err
	}
	defer removeCheckout(context.WithoutCancel(ctx), p.Git, p.Checkout)
	if err := readOnly(p.Checkout); err != nil {
		return nil, res, err
	}
	jail, err := p.Sandbox.EnterDetached(ctx, p.Git, p.Checkout, p.Show...)
	if err != nil {
		return nil, res, err
	}
	res = proc.Run(ctx, proc.Spec{
		Command: p.Cmd, Dir: p.Checkout, Env: p.Env, Prompt: p.Prompt, PromptFile: p.PromptFile, LogPath: p.LogPath,
		LogCap: p.LogCap, Redact: p.Redact, StuckTimeout: p.StuckTimeout, Timeout: p.Timeout, KillGrace: p.KillGrace,
		Wrap: jail.Wrap(),
	})
	notes, lerr := jail.Leave(context.WithoutCancel(ctx), p.Git)
	for _, n := range notes {
		noteInLog(p.LogPath, "claudopilot: sandbox: "+n)
	}
	out, err := os.ReadFile(p.LogPath)
	return out, res, errors.Join(err, lerr)
}

// Judge applies how the reviewer ended to its verdict: only a reviewer
// that finished (exit 0, in time) may pass; a BLOCKING verdict stands
// however it ended.
func (p ReviewProcess) Judge(v review.Verdict, res proc.Result) review.Verdict {
	ended := ""
	switch {
	case res.Reason == proc.ReasonTimeout:
		ended = "the reviewer ran longer than " + p.Timeout.String()
	case res.Reason == proc.ReasonStuck:
		ended = "the reviewer gave no output for " + p.StuckTimeout.String()
	case res.Reason != "":
		ended = fmt.Sprintf("the reviewer ended by %s", res.Reason)
		if res.Err != nil {
			ended += ": " + res.Err.Error()
		}
	case res.ExitCode != 0:
		ended = fmt.Sprintf("the reviewer exited %d", res.ExitCode)
	}
	switch {
	case ended == "":
	case v.Kind == review.PassKind:
		v = review.Verdict{Kind: review.None, Why: ended}
	case v.Kind == review.None:
		v.Why = ended + "; " + v.Why
	}
	return v
}

// ReviewEnv is a reviewer's environment: the driver's without any
// CLAUDOPILOT_ variable of its own, plus the contract's.
func ReviewEnv(driver []string, contract ...string) []string {
	env := make([]string, 0, len(driver)+len(contract))
	for _, kv := range driver {
		if !strings.HasPrefix(kv, "CLAUDOPILOT_") {
			env = append(env, kv)
		}
	}
	return append(env, contract...)
}

// removeCheckout gives write permission back and removes the checkout.
func removeCheckout(ctx context.Context, git *worktree.Client, dir string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	_ = git.RemoveWorktree(ctx, dir)
}

// FindingsPath is the file that carries the reviewers' findings to a worker
// attempt (CLAUDOPILOT_REVIEW_FINDINGS).
func FindingsPath(l state.Layout, id string, attempt int) string {
	return filepath.Join(l.LogDir(id), fmt.Sprintf("worker-%d.findings.md", attempt))
}

// writeFindings writes a worker's findings file, one finding per line
// item.
func writeFindings(l state.Layout, j scheduler.Job) (string, error) {
	p := FindingsPath(l, j.ID, j.Attempt)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("# Review findings for " + j.ID + "\n\n")
	for _, f := range j.Findings {
		b.WriteString("- " + strings.ReplaceAll(f, "\n", "\n  ") + "\n")
	}
	return p, os.WriteFile(p, []byte(b.String()), 0o644)
}
