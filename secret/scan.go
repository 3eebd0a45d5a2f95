package secret

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/claudopilot/claudopilot/worktree"
)

// Finding is one secret: where it is and which rule found it. Never its
// value.
type Finding struct {
	Path   string // "" for a commit's message
	Line   int
	Rule   string
	Detail string // the name it is assigned to, "base64", "split over two lines"
	Commit string // the commit adding it, when only the history has it; a message's commit
	// Allowed says what accepted it ("claudopilot:allow-secret",
	// "SECRET_ALLOW <glob>"); empty for a hit.
	Allowed string
	// Note says why an allow on the line did not accept the hit.
	Note string
}

func (f Finding) String() string {
	what := f.Rule
	if f.Detail != "" {
		what += " (" + f.Detail + ")"
	}
	switch {
	case f.Path == "":
		return fmt.Sprintf("message of commit %.12s:%d: %s", f.Commit, f.Line, what)
	case f.Commit != "":
		return fmt.Sprintf("%s:%d (added by commit %.12s): %s%s", f.Path, f.Line, f.Commit, what, f.note())
	}
	return fmt.Sprintf("%s:%d: %s%s", f.Path, f.Line, what, f.note())
}

func (f Finding) note() string {
	if f.Note == "" {
		return ""
	}
	return " [" + f.Note + "]"
}

// Notes for a hit an allow did not accept.
const (
	noteAgentAllow = "an allow comment the branch added is not trusted: list the path in SECRET_ALLOW or commit the line on the base"
	noteKnownAllow = "the driver's own secret: no allow accepts it"
)

// Describe lists findings for a failure detail, at most ten.
func Describe(fs []Finding) string {
	parts := make([]string, 0, min(len(fs), 10)+1)
	for i, f := range fs {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(fs)-10))
			break
		}
		parts = append(parts, f.String())
	}
	return "secrets in what the merge adds: " + strings.Join(parts, "; ")
}

// DescribeAllowed lists the hits an allow accepted, for a warning; ""
// for none.
func DescribeAllowed(fs []Finding) string {
	if len(fs) == 0 {
		return ""
	}
	parts := make([]string, 0, min(len(fs), 10)+1)
	for i, f := range fs {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(fs)-10))
			break
		}
		parts = append(parts, f.String()+" ["+f.Allowed+"]")
	}
	return "secrets accepted as false positives: " + strings.Join(parts, "; ")
}

// Scanner scans what a landing brings into history. The zero Scanner
// scans with the rules alone.
type Scanner struct {
	// Allow are SECRET_ALLOW's globs: a hit in a file whose path one
	// matches is accepted (a glob with no slash matches the file's name
	// in any folder).
	Allow []string
	// Known are the driver's own secrets (the Redactor's values): a
	// landing must not carry them either.
	Known *Redactor
	// Tree, when set, reads every line of the tree's diff (to against
	// from) the scan reads: the landing's checks read their changes
	// there, not in a diff of their own (issue 25 §1). A scan that did
	// not read that diff is an error.
	Tree *worktree.ChangeReader
}

// Report is a scan's result: the hits, and the hits accepted by an
// allow comment or SECRET_ALLOW (to be shown: an agent can write an
// allow comment too).
type Report struct {
	Found, Allowed []Finding
}

// Landing scans everything landing commit to on from brings into
// history: the lines its tree adds over from's, and each commit of
// from..to, its message and its own changes: a merge's against each of
// its parents (what is new against all of them is the merge's own), a
// binary file's bytes as text. A secret committed and removed later
// still lands in the history.
func (s *Scanner) Landing(ctx context.Context, git *worktree.Client, from, to string) (Report, error) {
	p := &patchScan{s: s, ctx: ctx, git: git, from: from}
	if p.treeIn, p.fromID = firstParentOf(ctx, git, from, to); p.treeIn != "" {
		// to's first parent is from (a landing's merge): the log's diff
		// of to against it is the tree's diff, read there once (one git
		// process fewer per landing, issue 25 §1).
		rep, err := p.history(from, to)
		if err == nil && s.Tree != nil && !p.treeSeen {
			err = fmt.Errorf("scan for secrets: the log of %s..%s showed no diff of %s against %s", from, to, to, from)
		}
		return rep, err
	}
	if err := p.treeDiff(from, to); err != nil {
		return Report{}, err
	}
	return p.history(from, to)
}

// firstParentOf is to's id and from's when from is to's first parent
// (asked of the client's resolver), else "".
func firstParentOf(ctx context.Context, git *worktree.Client, from, to string) (string, string) {
	if git == nil {
		return "", ""
	}
	f, err1 := git.RevParse(ctx, from)
	t, err2 := git.RevParse(ctx, to)
	p, err3 := git.RevParse(ctx, to+"^1")
	if err1 != nil || err2 != nil || err3 != nil || p != f {
		return "", ""
	}
	return t, f
}

// treeDiff scans the lines to's tree adds over from's.
func (p *patchScan) treeDiff(from, to string) error {
	tree := append([]string{"-c", "core.quotePath=false", "diff", "-p", "-U0", "--text", "--no-color", "--no-ext-diff", "--no-renames", "--no-textconv"}, worktree.PatchOptions()...)
	tree = append(tree, "--end-of-options", from, to)
	if err := p.git.GitStream(p.ctx, "", p.read, tree...); err != nil {
		return fmt.Errorf("scan for secrets: %w", err)
	}
	return nil
}

// history scans the commits of from..to, with their messages.
func (p *patchScan) history(from, to string) (Report, error) {
	nonce := make([]byte, 8)
	rand.Read(nonce)
	// The nonce marks the driver's headers: a message cannot forge one.
	p.nonce = hex.EncodeToString(nonce)
	// --diff-merges=separate: a merge's diff against each parent,
	// whatever log.diffMerges says.
	hist := append([]string{"-c", "core.quotePath=false", "log", "-m", "--diff-merges=separate", "-p", "-U0", "--text", "--no-color", "--no-ext-diff", "--no-renames", "--no-textconv"},
		worktree.PatchOptions()...)
	hist = append(hist, "--format=%x01"+p.nonce+" %H %P%n%B%n%x02"+p.nonce, "--end-of-options", from+".."+to)
	if err := p.git.GitStream(p.ctx, "", p.read, hist...); err != nil {
		return Report{}, fmt.Errorf("scan for secrets: %w", err)
	}
	return p.report(), nil
}

// Landing scans with the rules alone (Scanner.Landing) and returns the
// hits.
func Landing(ctx context.Context, git *worktree.Client, from, to string) ([]Finding, error) {
	r, err := (&Scanner{}).Landing(ctx, git, from, to)
	return r.Found, err
}

// Push scans what pushing to would publish beyond from: a landing's
// scan (Scanner.Landing) with known as the driver's own secrets. It
// returns the hits.
func Push(ctx context.Context, git *worktree.Client, from, to string, known *Redactor) ([]Finding, error) {
	r, err := (&Scanner{Known: known}).Landing(ctx, git, from, to)
	return r.Found, err
}

// patchScan reads patches (a diff, then a log's) and collects findings.
type patchScan struct {
	s     *Scanner
	nonce string // "" while reading the tree's diff

	// The base the scan is against, for an allow comment: only one the
	// base holds already (the user wrote it) is trusted. base caches each
	// file's lines there.
	ctx  context.Context
	git  *worktree.Client
	from string
	base map[string]map[string]bool

	// The commit being read: its id, parents, which of its diffs (one
	// per parent for a merge) and each diff's findings.
	commit  string
	parents int
	diffs   int
	perDiff map[Finding]int
	inMsg   bool
	msgLine int
	inPiece bool // the last line read was a piece of a long line

	path  string
	run   []string // consecutive added lines
	runAt int      // the new file's line of run[0]

	found []Finding
	// tree: the findings of the tree's diff. treeIn: when set, the
	// commit whose diff against its first parent (fromID, the scan's
	// base) is that diff, read in the log (asTree while it is read).
	tree           []Finding
	treeIn, fromID string
	asTree         bool
	treeSeen       bool // asTree was set once
}

// maxLine bounds the piece of a line read at once: a longer line (a
// binary file without newlines) is read in pieces overlapping by
// overlap bytes, so nothing of that size or shorter is cut in two.
const (
	maxLine = 1 << 20
	overlap = 4 << 10
)

// read consumes one git output.
func (p *patchScan) read(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, chunk...)
			if len(long) >= maxLine {
				p.line(string(long), true)
				// The next piece starts with the line's own prefix
				// and the overlap.
				long = append(long[:1:1], long[len(long)-overlap:]...)
			}
			continue
		}
		if len(chunk) > 0 || len(long) > 0 {
			l := string(append(long, chunk...))
			long = long[:0]
			p.line(strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r"), false)
		}
		if err == io.EOF {
			p.endCommit()
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// line takes one line of the output; piece: a piece of a long line, more
// of which follows.
func (p *patchScan) line(l string, piece bool) {
	if p.nonce != "" {
		switch {
		case strings.HasPrefix(l, "\x01"+p.nonce+" "):
			p.header(strings.Fields(l[1+len(p.nonce):]))
			return
		case l == "\x02"+p.nonce:
			p.inMsg = false
			return
		case p.inMsg:
			if p.diffs == 1 {
				if !p.inPiece {
					p.msgLine++
				}
				p.message(l)
			}
			p.inPiece = piece
			return
		}
	}
	if p.s.Tree != nil && (p.nonce == "" || p.asTree) {
		p.s.Tree.Line(l)
	}
	switch {
	case strings.HasPrefix(l, "diff --git "):
		p.endRun()
		p.path = ""
	case strings.HasPrefix(l, "+++ ") && p.runAt == 0:
		p.path = diffPath(strings.TrimPrefix(l, "+++ "))
	case strings.HasPrefix(l, "@@"):
		p.endRun()
		p.runAt = hunkStart(l)
	case strings.HasPrefix(l, "+") && p.runAt > 0 && (piece || p.inPiece):
		// A long line is scanned piece by piece, as one line: the last
		// piece joins the run (for what spans it and the next line).
		if piece {
			p.scanPiece(l[1:])
		} else {
			p.run = append(p.run, l[1:])
		}
	case strings.HasPrefix(l, "+") && p.runAt > 0:
		p.run = append(p.run, l[1:])
	default:
		if p.runAt > 0 && len(p.run) > 0 {
			// A removed line between added ones ends the run.
			at := p.runAt + len(p.run)
			p.endRun()
			p.runAt = at
		}
	}
	p.inPiece = piece
}

// scanPiece scans a piece of a long added line, the run's next line.
func (p *patchScan) scanPiece(l string) {
	run, at := p.run, p.runAt
	p.run, p.runAt = []string{l}, at+len(run)
	p.endRun()
	p.run, p.runAt = run, at
}

// header starts one diff of a commit: a merge's come once per parent.
func (p *patchScan) header(f []string) {
	p.endRun()
	if len(f) == 0 {
		return
	}
	if f[0] != p.commit {
		p.endCommit()
		p.commit, p.parents, p.diffs, p.msgLine = f[0], len(f)-1, 0, 0
		p.perDiff = map[Finding]int{}
	}
	p.diffs++
	p.asTree = p.treeIn != "" && f[0] == p.treeIn && p.diffs == 1 && len(f) > 1 && f[1] == p.fromID
	p.treeSeen = p.treeSeen || p.asTree
	p.inMsg, p.path = true, ""
}

// endCommit keeps a merge's findings that every one of its diffs has:
// what is new against each parent is the merge's own. A line one parent
// holds came with that parent, and its own commits are scanned.
func (p *patchScan) endCommit() {
	p.endRun()
	for f, n := range p.perDiff {
		if p.parents <= 1 || n >= p.parents {
			p.found = append(p.found, f)
		}
	}
	p.commit, p.perDiff = "", nil
}

// message scans one line of a commit's message.
func (p *patchScan) message(l string) {
	for _, h := range p.hits([]string{l}) {
		// A message of a commit being landed is the branch's: its
		// allow comment is never trusted.
		f := Finding{Line: p.msgLine, Rule: h.rule, Detail: h.detail, Commit: p.commit}
		if slices.Contains(allows(l), h.rule) {
			f.Note = noteAgentAllow
		}
		p.found = append(p.found, f)
	}
}

// hits are the rules' and the known values' hits in consecutive lines.
func (p *patchScan) hits(lines []string) []lineHit {
	hs := runHits(lines)
	for i, l := range lines {
		for _, h := range p.s.Known.knownHits(l) {
			hs = append(hs, lineHit{hit: h, line: i})
		}
	}
	return hs
}

// endRun scans the run of added lines read.
func (p *patchScan) endRun() {
	run, at := p.run, p.runAt
	p.run, p.runAt = nil, 0
	if len(run) == 0 || p.path == "" {
		return
	}
	seen := map[Finding]bool{}
	for _, h := range p.hits(run) {
		f := Finding{Path: p.path, Line: at + h.line, Rule: h.rule, Detail: h.detail, Commit: p.commit}
		if seen[f] {
			continue
		}
		seen[f] = true
		p.allow(&f, run, h)
		switch {
		case p.nonce == "":
			p.tree = append(p.tree, f) // the tree's diff
		case p.asTree:
			tf := f
			tf.Commit = ""
			p.tree = append(p.tree, tf)
		}
		if p.perDiff != nil {
			p.perDiff[f]++
		} else if p.nonce != "" {
			p.found = append(p.found, f)
		}
	}
}

// allow decides whether an allow accepts hit h of run, found as f. The
// driver's own secrets are never accepted. An allow comment is trusted
// only on a line the base already holds in that file, as it is: the
// user wrote it there; one the branch wrote is the agent's verdict on
// its own output.
func (p *patchScan) allow(f *Finding, run []string, h lineHit) {
	lines := []string{run[h.line]}
	if h.also {
		lines = append(lines, run[h.line+1])
	}
	var commented []string
	for _, l := range lines {
		if slices.Contains(allows(l), h.rule) {
			commented = append(commented, l)
		}
	}
	g := p.s.allowed(p.path)
	switch {
	case h.rule == ruleKnown && (len(commented) > 0 || g != ""):
		f.Note = noteKnownAllow
	case len(commented) > 0 && slices.ContainsFunc(commented, p.onBase):
		f.Allowed = "claudopilot:allow-secret"
	case g != "":
		f.Allowed = "SECRET_ALLOW " + g
	case len(commented) > 0:
		f.Note = noteAgentAllow
	}
}

// onBase reports whether the scan's base holds line in the file being
// read. A base that cannot be read holds nothing: the hit stands.
func (p *patchScan) onBase(line string) bool {
	if p.git == nil || p.from == "" {
		return false
	}
	lines, ok := p.base[p.path]
	if !ok {
		lines = map[string]bool{}
		if data, found, err := p.git.ReadFile(p.ctx, p.from, p.path); err == nil && found {
			for l := range strings.SplitSeq(string(data), "\n") {
				lines[strings.TrimSuffix(l, "\r")] = true
			}
		}
		if p.base == nil {
			p.base = map[string]map[string]bool{}
		}
		p.base[p.path] = lines
	}
	return lines[line]
}

// allowed is the SECRET_ALLOW glob matching file, or "".
func (s *Scanner) allowed(file string) string {
	for _, g := range s.Allow {
		name := file
		if !strings.Contains(g, "/") {
			name = path.Base(file)
		}
		if ok, _ := doublestar.Match(g, name); ok {
			return g
		}
	}
	return ""
}

// report sorts the findings: the tree's (read first: its lines are
// where a secret is now), then the history's for a file and rule the
// tree has none of (one per file and rule: a secret several commits
// carry is one secret).
func (p *patchScan) report() Report {
	type key struct {
		path, rule string
		allowed    bool
	}
	inTree := map[key]bool{}
	seen := map[Finding]bool{}
	var r Report
	for _, f := range slices.Concat(p.tree, p.found) {
		k := key{f.Path, f.Rule, f.Allowed != ""}
		switch {
		case f.Commit == "":
			inTree[k] = true
		case f.Path == "":
			// A message: each line its own.
		case inTree[k]:
			continue
		default:
			inTree[k] = true
		}
		if seen[f] {
			continue
		}
		seen[f] = true
		if f.Allowed != "" {
			r.Allowed = append(r.Allowed, f)
		} else {
			r.Found = append(r.Found, f)
		}
	}
	byPlace := func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Rule, b.Rule))
	}
	slices.SortStableFunc(r.Found, byPlace)
	slices.SortStableFunc(r.Allowed, byPlace)
	return r
}

// diffPath reads the path of a "+++ b/<path>" line ("" for /dev/null),
// unquoting git's C-style quotes.
func diffPath(s string) string {
	// git ends a path holding a space with a tab.
	s = strings.TrimSuffix(s, "\t")
	if s == "/dev/null" {
		return ""
	}
	if strings.HasPrefix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			s = u
		}
	}
	return strings.TrimPrefix(s, "b/")
}

// hunkStart reads c from "@@ -a,b +c,d @@".
func hunkStart(l string) int {
	_, rest, _ := strings.Cut(l, " +")
	num, _, _ := strings.Cut(rest, " ")
	num, _, _ = strings.Cut(num, ",")
	n, _ := strconv.Atoi(num)
	return n
}
