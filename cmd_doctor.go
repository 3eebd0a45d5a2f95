package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/land"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
	"github.com/claudopilot/claudopilot/worktree"
)

const doctorAbout = `
Check that 'claudopilot run' can work here, and say how to fix what is
wrong, one line per check:

  git        git 2.38 or newer (merges use git merge-tree --write-tree)
  repository the roadmap is inside a git repository
  settings   claudopilot.config reads, every value is valid
  base       the base branch exists (BASE_BRANCH, else the current branch)
  identity   git has a user name and email (merges are commits)
  agent      the agent command is on PATH ("script" is built in); also the
             supervisor when SUPERVISOR_CMD is set
  gate       a gate is set (no gate is a warning: phases merge unchecked)
  prepare    the prepare command, if any, is on PATH
  manifest   the manifest is valid, every phase has a doc, and the roadmap
             is committed on the base branch
  lock       no stale lock (a lock whose driver is dead): a warning
  worktrees  no leftover worktree or branch of a merged or unknown phase,
             no worktree whose folder is gone: warnings
  checkout   the base checkout is clean (uncommitted changes a merge also
             makes hold the merge back) and no move of it after a merge is
             pending: warnings

Settings are resolved as run resolves them, and doctor takes run's setting
flags, so 'claudopilot doctor --base main --agent script' checks what
'claudopilot run --base main --agent script' would use.

Blocking problems are marked FAIL (✗ on a terminal), warnings warn (!),
passed checks ok (✓). The exit code is 1 when anything blocks, else 0.`

const doctorExample = `  claudopilot doctor
  claudopilot doctor roadmap/ --base main --agent script`

// DoctorError says doctor found blocking problems; the checks themselves
// are already on stdout.
type DoctorError struct{ Problems int }

func (e *DoctorError) Error() string {
	if e.Problems == 1 {
		return "doctor: 1 problem found"
	}
	return fmt.Sprintf("doctor: %d problems found", e.Problems)
}

type doctorLevel int

const (
	doctorOK doctorLevel = iota
	doctorWarn
	doctorFail
)

// doctorCheck is one line of doctor's report.
type doctorCheck struct {
	level  doctorLevel
	msg    string   // what was found
	fix    string   // how to fix it ("" when there is nothing to do)
	detail []string // further lines, e.g. the manifest's problems
}

// doctorState is what the checks found out, for the checks after them
// (and for doctorQueueChecks). Fields are nil or empty when unknown.
type doctorState struct {
	a        *app
	git      *worktree.Client
	dir      string           // the roadmap folder
	dirGiven bool             // named on the command line
	rm       *roadmap.Roadmap // nil when invalid
	rmErr    error
	set      settings
	base     string // the base branch, when it exists
	baseTip  string
	layout   state.Layout
	checks   []doctorCheck
}

func (d *doctorState) add(level doctorLevel, msg, fix string, detail ...string) {
	d.checks = append(d.checks, doctorCheck{level: level, msg: msg, fix: fix, detail: detail})
}

func cmdDoctor(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "doctor", "doctor [ROADMAP_DIR] [run's setting flags]", doctorAbout, doctorExample)
	ks := runKnobs()
	addKnobFlags(fs, ks)
	dir, err := parseSettingFlags(ctx, a, fs, ks, args)
	if err != nil {
		return err
	}
	d := &doctorState{a: a, dir: dir, dirGiven: fs.Arg(0) != ""}
	d.checkGit(ctx)
	d.checkRepo(ctx)
	d.loadRoadmap()
	d.checkSettings(fs, ks)
	d.checkBase(ctx)
	d.checkIdentity(ctx)
	d.checkAgent()
	d.checkSandbox(ctx)
	d.checkManifest(ctx)
	d.checkLeftovers(ctx)
	d.checkBaseCheckout(ctx)
	d.checks = append(d.checks, doctorQueueChecks(ctx, d)...)

	fails, warns := d.print()
	if fails > 0 {
		return &DoctorError{Problems: fails}
	}
	switch warns {
	case 0:
		fmt.Fprintln(a.s.Out, "\nno problems found")
	case 1:
		fmt.Fprintln(a.s.Out, "\nno blocking problems (1 warning)")
	default:
		fmt.Fprintf(a.s.Out, "\nno blocking problems (%d warnings)\n", warns)
	}
	return nil
}

// doctorQueueChecks checks queue mode when a token is set: GitHub takes
// the token and the repository can be read. It runs last, with everything
// the other checks found in d.
func doctorQueueChecks(ctx context.Context, d *doctorState) []doctorCheck {
	if d.git == nil || d.a.env["GITHUB_TOKEN"] == "" && d.a.env["GH_TOKEN"] == "" {
		return []doctorCheck{{level: doctorOK, msg: "queue mode: no GITHUB_TOKEN or GH_TOKEN set (only `claudopilot queue` and `run --issues` need one)"}}
	}
	qs, err := prepareQueue(ctx, d.a, d.git, nilFlags{})
	if err != nil {
		return []doctorCheck{{level: doctorFail, msg: "queue mode: " + err.Error(), fix: "set GH_REPO=owner/name, or give the repository an origin remote on GitHub (docs/queue.md)"}}
	}
	gh, err := issues.NewGitHub(qs.GitHub)
	if err != nil {
		return []doctorCheck{{level: doctorFail, msg: "queue mode: " + err.Error(), fix: "see docs/queue.md"}}
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	login, err := gh.Login(ctx)
	if err != nil {
		return []doctorCheck{{level: doctorFail, msg: "queue mode: GitHub refused the token: " + err.Error(), fix: "make a token that may read and write issues, pull requests and contents, and export it as GITHUB_TOKEN"}}
	}
	if _, err := gh.DefaultBranch(ctx); err != nil {
		return []doctorCheck{{level: doctorFail, msg: fmt.Sprintf("queue mode: cannot read %s: %v", gh.Repo(), err), fix: "check GH_REPO, GITHUB_API_URL and that the token's user (" + login + ") can see the repository"}}
	}
	return []doctorCheck{{level: doctorOK, msg: fmt.Sprintf("queue mode: the token works (as %s) and %s is reachable", login, gh.Repo())}}
}

// print writes the report; markers are ✓ ✗ ! on a terminal and ok FAIL
// warn elsewhere.
func (d *doctorState) print() (fails, warns int) {
	s := d.a.s
	fancy := s.ErrIsTTY
	if f, ok := s.Out.(*os.File); ok && !term.IsTerminal(int(f.Fd())) {
		fancy = false
	}
	marks := map[doctorLevel]string{doctorOK: "ok  ", doctorWarn: "warn", doctorFail: "FAIL"}
	if fancy {
		marks = map[doctorLevel]string{doctorOK: "✓", doctorWarn: "!", doctorFail: "✗"}
	}
	colors := map[doctorLevel]string{doctorOK: "32", doctorWarn: "33", doctorFail: "31"}
	indent := strings.Repeat(" ", len([]rune(marks[doctorOK]))+1)
	for _, c := range d.checks {
		m := marks[c.level]
		if s.Color {
			m = "\x1b[" + colors[c.level] + "m" + m + "\x1b[0m"
		}
		line := m + " " + c.msg
		if c.fix != "" {
			line += "; fix: " + c.fix
		}
		fmt.Fprintln(s.Out, line)
		for _, l := range c.detail {
			fmt.Fprintf(s.Out, "%s%s\n", indent, l)
		}
		switch c.level {
		case doctorFail:
			fails++
		case doctorWarn:
			warns++
		}
	}
	return fails, warns
}

var gitVersionRe = regexp.MustCompile(`(\d+)\.(\d+)(?:\.(\d+))?`)

func (d *doctorState) checkGit(ctx context.Context) {
	cmd := exec.CommandContext(ctx, "git", "version")
	cmd.Env = gitEnv(d.a)
	out, err := cmd.Output()
	if err != nil {
		d.add(doctorFail, fmt.Sprintf("git: cannot run it (%v)", err), "install git 2.38 or newer")
		return
	}
	v := strings.TrimSpace(string(out))
	m := gitVersionRe.FindStringSubmatch(v)
	if m == nil {
		d.add(doctorWarn, fmt.Sprintf("git: cannot read the version from %q", v), "make sure it is 2.38 or newer")
		return
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major < 2 || major == 2 && minor < 38 {
		d.add(doctorFail, fmt.Sprintf("git %s is too old: merges need git merge-tree --write-tree (2.38)", m[0]), "install git 2.38 or newer")
		return
	}
	d.add(doctorOK, fmt.Sprintf("git %s", m[0]), "")
}

func (d *doctorState) checkRepo(ctx context.Context) {
	git, err := openRepoFor(ctx, d.a, d.dir)
	if err != nil {
		d.add(doctorFail, fmt.Sprintf("repository: %v", err), "run claudopilot in your repository, or make one: git init")
		return
	}
	d.git = git
	if !pathWithin(git.Dir, d.dir) {
		d.add(doctorFail, fmt.Sprintf("repository %s: the roadmap %s is outside it", git.Dir, d.rel(d.dir)), "keep the roadmap folder inside the repository")
		return
	}
	d.add(doctorOK, fmt.Sprintf("repository %s", git.Dir), "")
}

// loadRoadmap reads the manifest early: its **Gate:** and **Prepare:**
// lines take part in the settings. Its problems are reported later.
func (d *doctorState) loadRoadmap() {
	rm, err := roadmap.Load(d.dir, roadmap.Options{RequireDocs: true})
	if err == nil {
		d.rm = rm
	}
	d.rmErr = err
}

// checkSettings resolves the settings as run does: flags, environment,
// claudopilot.config, the manifest's lines, defaults.
func (d *doctorState) checkSettings(fs flagLookup, ks []knob) {
	var file map[string]fileValue
	var read []string
	configBad := false
	if d.git != nil {
		f, notes, err := readConfig(d.git.Dir, ks)
		file = f
		// One bad line costs that line only: the rest is read and
		// checked, so the checks below do not fail for settings the
		// file does set.
		var cerr *ConfigError
		configBad = err != nil
		if errors.As(err, &cerr) {
			for _, p := range cerr.Problems {
				d.add(doctorFail, "settings: "+p, "fix or delete this line (the file is read as data, never run)")
			}
		} else if err != nil {
			d.add(doctorFail, "settings: "+err.Error(), "")
		}
		for _, n := range notes {
			d.add(doctorWarn, "settings: "+n.String(), "")
		}
		for _, src := range configSources {
			if _, err := os.Stat(filepath.Join(d.git.Dir, filepath.FromSlash(src.rel))); err == nil {
				read = append(read, src.rel)
			}
		}
	}
	fromManifest := map[string]string{}
	if m := d.manifest(); m != nil {
		fromManifest["GATE_CMD"], fromManifest["WORKTREE_PREPARE_CMD"] = m.Gate.Value, m.Prepare.Value
	}
	d.set = resolveWith(fs, ks, d.a.env, file, fromManifest)
	if err := checkKnobs(d.set, ks, nil); err != nil {
		d.add(doctorFail, "settings: "+err.Error(), "fix the value where it comes from")
	} else if n, _ := d.set.int("MAX_PARALLEL"); n < 1 {
		d.add(doctorFail, fmt.Sprintf("settings: MAX_PARALLEL must be at least 1 (from %s)", d.set.source["MAX_PARALLEL"]), "set it to 1 or more")
	} else if len(read) > 0 && configBad {
		d.add(doctorOK, "settings: the other lines valid ("+strings.Join(read, ", ")+" read)", "")
	} else if len(read) > 0 {
		d.add(doctorOK, "settings: valid ("+strings.Join(read, ", ")+" read)", "")
	} else {
		d.add(doctorOK, "settings: valid (no "+ConfigFile+")", "")
	}
}

// checkBase finds the base branch as run does: BASE_BRANCH, else the
// current branch.
func (d *doctorState) checkBase(ctx context.Context) {
	if d.git == nil {
		return
	}
	base, src := d.set.str("BASE_BRANCH"), "from "+d.set.source["BASE_BRANCH"]
	if base == "" {
		cur, err := d.git.CurrentBranch(ctx)
		switch {
		case err != nil:
			d.add(doctorFail, fmt.Sprintf("base branch: %v", err), "")
		case cur == "":
			d.add(doctorFail, "base branch: HEAD is detached", "check out the branch to merge into, or set BASE_BRANCH in "+ConfigFile)
		default:
			base, src = cur, "the current branch"
		}
	}
	if base != "" {
		tip, err := d.git.RevParse(ctx, "refs/heads/"+base)
		switch {
		case errors.Is(err, worktree.ErrNoRev) && d.unborn(ctx, base):
			d.add(doctorFail, fmt.Sprintf("base branch %s (%s) has no commit yet", base, src), "commit the roadmap: git add -A && git commit")
		case errors.Is(err, worktree.ErrNoRev):
			d.add(doctorFail, fmt.Sprintf("base branch %s (%s) does not exist", base, src), "create it, or name another with --base or BASE_BRANCH")
		case err != nil:
			d.add(doctorFail, fmt.Sprintf("base branch %s: %v", base, err), "")
		case src == "the current branch" && (base == "main" || base == "master"):
			d.base, d.baseTip = base, tip
			d.add(doctorWarn, fmt.Sprintf("base branch %s (%s): run merges into %s only when told to", base, src, base),
				fmt.Sprintf("pass --base %s to run, or set BASE_BRANCH=%s in %s", base, base, ConfigFile))
		default:
			d.base, d.baseTip = base, tip
			d.add(doctorOK, fmt.Sprintf("base branch %s (%s)", base, src), "")
		}
	}
}

func (d *doctorState) checkIdentity(ctx context.Context) {
	if d.git == nil {
		return
	}
	if ok, err := d.git.HasIdentity(ctx); err != nil {
		d.add(doctorFail, fmt.Sprintf("git identity: %v", err), "")
	} else if !ok {
		d.add(doctorFail, "git identity: none set, and merges are commits",
			`git config user.name "Your Name" && git config user.email you@example.com`)
	} else {
		d.add(doctorOK, "git identity set", "")
	}
}

// unborn reports whether branch is the current branch, still without a
// commit (a fresh git init).
func (d *doctorState) unborn(ctx context.Context, branch string) bool {
	cur, err := d.git.CurrentBranch(ctx)
	return err == nil && cur == branch
}

func (d *doctorState) manifest() *manifest.Manifest {
	if d.rm != nil {
		return d.rm.Manifest
	}
	// An invalid roadmap still has readable Gate/Prepare lines.
	b, err := os.ReadFile(filepath.Join(d.dir, roadmap.ManifestName))
	if err != nil {
		return nil
	}
	m, _ := manifest.Parse(b)
	return m
}

func (d *doctorState) checkAgent() {
	if d.set.val == nil {
		return
	}
	top := ""
	if d.git != nil {
		top = d.git.Dir
	}
	agent := d.set.str("AGENT_CMD")
	d.commandCheck("agent", agent, d.set.source["AGENT_CMD"], top, doctorFail, agentFix)
	if sup := d.set.str("SUPERVISOR_CMD"); sup != "" && sup != agent {
		d.commandCheck("supervisor", sup, d.set.source["SUPERVISOR_CMD"], top, doctorFail, supervisorFix)
	}

	gate, src := strings.TrimSpace(d.set.str("GATE_CMD")), d.set.source["GATE_CMD"]
	switch gate {
	case "", "true", ":":
		d.add(doctorWarn, fmt.Sprintf("gate: none (%q, from %s): phases merge without any check", gate, src),
			"put your test command in the manifest's **Gate:** line, or GATE_CMD in "+ConfigFile)
	default:
		d.commandCheck("gate", gate, src, top, doctorWarn, "install it, or have WORKTREE_PREPARE_CMD make it")
	}
	if rev := strings.TrimSpace(d.set.str("REVIEW_CMD")); rev != "" {
		d.commandCheck("reviewer", rev, d.set.source["REVIEW_CMD"], top, doctorFail, "install it, or set REVIEW_CMD (--review) to a command on PATH, or unset it to run without the review gate")
	}
	if rev := strings.TrimSpace(d.set.str("REVIEW_CMD")); rev != "" {
		d.commandCheck("reviewer", rev, d.set.source["REVIEW_CMD"], top, doctorFail, "install it, or set REVIEW_CMD (--review) to a command on PATH, or unset it to run without the review gate")
	}
	if prep := strings.TrimSpace(d.set.str("WORKTREE_PREPARE_CMD")); prep == "" {
		d.add(doctorOK, "prepare: none (worktrees start as plain checkouts)", "")
	} else {
		d.commandCheck("prepare", prep, d.set.source["WORKTREE_PREPARE_CMD"], top, doctorWarn, "install it, or change WORKTREE_PREPARE_CMD")
	}
}

// The fixes of a missing agent or supervisor, said by doctor and by run.
const (
	agentFix      = `install it (and log in), or set AGENT_CMD (--agent); "script" runs each phase doc's sh block`
	supervisorFix = "install it (and log in), or set SUPERVISOR_CMD (--supervisor)"
)

// commandCheck looks up the program a shell command line starts with.
func (d *doctorState) commandCheck(what, cmd, src, top string, level doctorLevel, fix string) {
	if strings.TrimSpace(cmd) == "" {
		d.add(doctorFail, fmt.Sprintf("%s: empty (from %s)", what, src), fix)
		return
	}
	if what == "agent" || what == "supervisor" {
		if cmd == work.ScriptAgent {
			d.add(doctorOK, fmt.Sprintf("%s: the built-in script agent (from %s)", what, src), "")
			return
		}
	}
	prog, ok := commandWord(cmd)
	switch {
	case !ok:
		d.add(doctorWarn, fmt.Sprintf("%s: %s (from %s): cannot tell which program it runs", what, clipCmd(cmd), src), "make sure it runs from a phase worktree")
	case shellBuiltin(prog):
		d.add(doctorOK, fmt.Sprintf("%s: %s (from %s)", what, clipCmd(cmd), src), "")
	default:
		path, found := lookPathIn(prog, d.a.getenv("PATH"), top)
		if !found {
			d.add(level, fmt.Sprintf("%s: %s (from %s): %s not found", what, clipCmd(cmd), src, prog), fix)
			return
		}
		d.add(doctorOK, fmt.Sprintf("%s: %s (from %s; %s)", what, clipCmd(cmd), src, path), "")
	}
}

func clipCmd(cmd string) string {
	if r := []rune(cmd); len(r) > 60 {
		return string(r[:57]) + "..."
	}
	return cmd
}

// commandWord returns the program a sh command line runs: its first word
// after VAR=value assignments (and exec or command). ok is false when that
// word depends on expansions or is shell syntax.
func commandWord(cmd string) (string, bool) {
	words, ok := shellWords(cmd)
	if !ok {
		return "", false
	}
	for _, w := range words {
		if i := strings.IndexByte(w, '='); i > 0 && isName(w[:i]) {
			continue
		}
		if w == "exec" || w == "command" {
			continue
		}
		if strings.ContainsAny(w, "$`(){}<>|&;*?[") {
			return "", false
		}
		return w, true
	}
	return "", false
}

// shellWords splits the start of a command line into words, with sh's
// quoting; it stops at the first operator.
func shellWords(s string) ([]string, bool) {
	var (
		words []string
		cur   strings.Builder
		in    bool // inside a word
	)
	end := func() {
		if in {
			words = append(words, cur.String())
			cur.Reset()
			in = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			end()
		case c == ';' || c == '|' || c == '&':
			end()
			return words, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			in = true
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			in = true
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return nil, false
			}
			q := s[i+1 : i+1+j]
			if strings.ContainsAny(q, "$`\\") {
				return nil, false
			}
			cur.WriteString(q)
			i += j + 1
			in = true
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	end()
	return words, true
}

func isName(s string) bool {
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

func shellBuiltin(w string) bool {
	switch w {
	case ".", ":", "true", "false", "cd", "eval", "set", "export", "test", "[", "echo", "printf", "exit", "source", "if", "for", "while", "case", "{", "(":
		return true
	}
	return false
}

// lookPathIn finds an executable the way sh would with PATH=pathEnv; a name
// with a slash is taken from the repository's top (agents and gates run at
// a worktree's top, which holds the same files).
func lookPathIn(name, pathEnv, top string) (string, bool) {
	isExec := func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
	}
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) && top != "" {
			p = filepath.Join(top, p)
		}
		return p, isExec(p)
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		if p := filepath.Join(dir, name); isExec(p) {
			return p, true
		}
	}
	return "", false
}

func (d *doctorState) checkManifest(ctx context.Context) {
	mpath := filepath.Join(d.dir, roadmap.ManifestName)
	rm, err := d.rm, d.rmErr
	var bad *roadmap.InvalidError
	switch {
	case err == nil:
	case errors.As(err, &bad):
		if _, serr := os.Stat(mpath); errors.Is(serr, fs.ErrNotExist) {
			init := "claudopilot init"
			if d.dirGiven {
				init += " --dir " + d.rel(d.dir)
			}
			d.add(doctorFail, fmt.Sprintf("manifest: %s not found", d.rel(mpath)),
				"create a roadmap with "+init+", or name its folder: claudopilot doctor DIR")
			return
		}
		var lines []string
		for _, p := range bad.Problems {
			if p.Line > 0 {
				lines = append(lines, fmt.Sprintf("%s:%d: %s", d.rel(mpath), p.Line, p.Msg))
			} else {
				lines = append(lines, fmt.Sprintf("%s: %s", d.rel(mpath), p.Msg))
			}
		}
		d.add(doctorFail, fmt.Sprintf("manifest %s: %s", d.rel(mpath), countNoun(len(bad.Problems), "problem")),
			"fix the lines below (the grammar is in docs/manifest.md), then check with claudopilot plan", lines...)
		return
	default:
		d.add(doctorFail, fmt.Sprintf("manifest %s: %v", d.rel(mpath), err), "")
		return
	}
	counts := map[string]int{}
	for s, n := range rm.Counts() {
		counts[string(s)] = n
	}
	d.add(doctorOK, fmt.Sprintf("manifest %s: %s (%s)", d.rel(mpath), countNoun(len(rm.Nodes), "phase"), countsLine(counts)), "")
	for _, w := range rm.Warnings {
		d.add(doctorWarn, fmt.Sprintf("%s:%d: %s", d.rel(mpath), w.Line, w.Msg), "edit the manifest")
	}
	if d.git == nil || d.base == "" || !pathWithin(d.git.Dir, d.dir) {
		return
	}
	layout, err := engine.MakeLayout(d.git, d.dir, d.base)
	if err != nil {
		d.add(doctorFail, err.Error(), "keep the roadmap inside the repository")
		return
	}
	d.layout = layout
	if err := engine.CheckCommitted(ctx, d.git, rm, layout); err != nil {
		var lines []string
		if errors.As(err, &bad) {
			for _, p := range bad.Problems {
				lines = append(lines, p.Msg)
			}
		} else {
			lines = []string{err.Error()}
		}
		d.add(doctorFail, fmt.Sprintf("the roadmap is not committed on %s: worktrees are cut from it", d.base),
			fmt.Sprintf("git add %s && git commit", layout.RoadmapRel), lines...)
		return
	}
	d.add(doctorOK, fmt.Sprintf("the roadmap is committed on %s", d.base), "")
}

func (d *doctorState) checkLeftovers(ctx context.Context) {
	if d.git == nil {
		return
	}
	common, err := d.git.CommonDir(ctx)
	if err != nil {
		d.add(doctorFail, fmt.Sprintf("lock: %v", err), "")
		return
	}
	lockPath := filepath.Join(common, "claudopilot.lock")
	switch info, st := lockStatus(lockPath); st {
	case lockFree:
		d.add(doctorOK, "lock: free (no run going on)", "")
	case lockLive:
		d.add(doctorOK, "lock: "+lockHolder(info), "")
	case lockStale:
		who := "its driver died before writing it"
		if info.PID > 0 {
			who = fmt.Sprintf("pid %d on %s is gone", info.PID, info.Host)
		}
		d.add(doctorWarn, fmt.Sprintf("lock: %s is stale (%s)", d.rel(lockPath), who), "claudopilot clean")
	}

	layout := d.layout
	if layout.Top == "" {
		layout = state.Layout{Top: d.git.Dir}
	}
	lefts, err := land.Leftovers(ctx, d.git, layout, d.rm)
	if err != nil {
		d.add(doctorWarn, fmt.Sprintf("worktrees: %v", err), "")
		return
	}
	found := 0
	for _, l := range lefts {
		k := l.Kind()
		var what string
		switch {
		case l.Worktree != nil && l.Worktree.Prunable:
			what = fmt.Sprintf("worktree %s is registered but its folder is gone", d.rel(l.Worktree.Path))
		case k != "merged" && k != "unknown", d.rm == nil: // an invalid manifest says nothing about phases
			continue
		case l.Worktree != nil:
			what = fmt.Sprintf("worktree %s is left over: %s", d.rel(l.Worktree.Path), l.Describe())
		default:
			what = fmt.Sprintf("branch %s is left over: %s", l.Branch, l.Describe())
		}
		found++
		fix := "claudopilot clean"
		if k == "merged" || k == "unknown" {
			if d.baseTip == "" {
				fix = "claudopilot clean (once the base branch is set)"
			} else if in, err := l.OnBase(ctx, d.git, d.baseTip); err == nil && !in {
				fix = fmt.Sprintf("its work is not on %s: merge it, or remove it by hand (git worktree remove, git branch -D)", d.base)
			}
		}
		d.add(doctorWarn, what, fix)
	}
	if found == 0 {
		d.add(doctorOK, "worktrees: nothing left over", "")
	}
}

// rel names a path from the current folder.
func (d *doctorState) rel(p string) string { return relTo(d.a.cwd, p) }
