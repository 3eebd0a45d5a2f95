// Package doctor is `claudopilot doctor`: check what run needs, with the
// same settings model and rules run uses.
package doctor

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

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/internal/cli/wire"
	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/land"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/promote"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/sandbox"
	"github.com/claudopilot/claudopilot/scanner"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
	"golang.org/x/term"
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
	a        *cmdutil.App
	git      *worktree.Client
	dir      string           // the roadmap folder
	dirGiven bool             // named on the command line
	rm       *roadmap.Roadmap // nil when invalid
	rmErr    error
	set      *settings.Settings // nil until checkSettings
	base     string             // the base branch, when it exists
	baseTip  string
	layout   state.Layout
	checks   []doctorCheck
}

func (d *doctorState) add(level doctorLevel, msg, fix string, detail ...string) {
	d.checks = append(d.checks, doctorCheck{level: level, msg: msg, fix: fix, detail: detail})
}

// Options are what doctor's flags and arguments say: run's setting flags,
// so it checks what run would use.
type Options struct {
	App      *cmdutil.App
	Dir      string // the roadmap folder
	DirGiven bool   // named on the command line
	Flags    settings.Flags
}

// NewCmd is `claudopilot doctor`; runF runs the parsed options (Run when
// nil).
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("doctor", "check git, settings, agent, manifest and leftovers, with a fix for each problem", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "doctor", "doctor [ROADMAP_DIR] [run's setting flags]", doctorAbout, doctorExample)
	settings.AddFlags(fs, settings.ForScope(settings.Run))
	dir, err := cmdutil.ParseSettingFlags(ctx, a, fs, settings.Run, args)
	if err != nil {
		return nil, err
	}
	return &Options{App: a, Dir: dir, DirGiven: fs.Arg(0) != "", Flags: fs}, nil
}

// Run runs every check, prints one line each, and fails (DoctorError)
// when anything blocks.
func Run(ctx context.Context, o *Options) error {
	a := o.App
	d := &doctorState{a: a, dir: o.Dir, dirGiven: o.DirGiven}
	d.checkGit(ctx)
	d.checkRepo(ctx)
	d.loadRoadmap()
	d.checkSettings(o.Flags)
	d.checkBase(ctx)
	d.checkIdentity(ctx)
	d.checkAgent()
	d.checkSandbox(ctx)
	d.checkCluster(ctx)
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
		fmt.Fprintln(a.S.Out, "\nno problems found")
	case 1:
		fmt.Fprintln(a.S.Out, "\nno blocking problems (1 warning)")
	default:
		fmt.Fprintf(a.S.Out, "\nno blocking problems (%d warnings)\n", warns)
	}
	return nil
}

// doctorQueueChecks checks queue mode when a token is set: GitHub takes
// the token and the repository can be read. It runs last, with everything
// the other checks found in d.
func doctorQueueChecks(ctx context.Context, d *doctorState) []doctorCheck {
	if d.git == nil || d.a.Env["GITHUB_TOKEN"] == "" && d.a.Env["GH_TOKEN"] == "" && d.a.Env["GH_APP_TOKEN_CMD"] == "" && d.a.Env["GH_APP_TOKEN_SCRIPT"] == "" && d.a.Env["GH_APP_ID"] == "" {
		return []doctorCheck{{level: doctorOK, msg: "queue mode: no GITHUB_TOKEN or GH_TOKEN set (only `claudopilot queue` and `run --issues` need one)"}}
	}
	if d.set == nil {
		return nil
	}
	g, err := wire.GitHub(ctx, d.set, d.git, d.a.Env, "queue")
	if err != nil {
		return []doctorCheck{{level: doctorFail, msg: "queue mode: " + err.Error(), fix: "set GH_REPO=owner/name, or give the repository an origin remote on GitHub (docs/queue.md)"}}
	}
	gh, err := issues.NewGitHub(g)
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
	checks := []doctorCheck{{level: doctorOK, msg: fmt.Sprintf("queue mode: the token works (as %s) and %s is reachable", login, gh.Repo())}}
	use, refused, err := issues.PickMergeMethod(ctx, gh, d.set.MergeMethod)
	switch {
	case err != nil:
		checks = append(checks, doctorCheck{level: doctorWarn, msg: "queue mode: cannot read the repository's merge methods: " + err.Error()})
	case refused != "":
		checks = append(checks, doctorCheck{level: doctorFail, msg: "queue mode: " + refused, fix: "set MERGE_METHOD=auto (the default) or a method the repository allows"})
	case d.set.Source("MERGE_METHOD").Kind == settings.FromDefault:
		checks = append(checks, doctorCheck{level: doctorOK, msg: "queue mode: " + issues.DefaultMethodNote(use)})
	}
	return append(checks, doctorFeedChecks(ctx, d, gh)...)
}

// doctorFeedChecks checks the queue's feed (docs/queue.md): the scanners'
// files load, the refill's new default is announced, and a PROMOTE_TO
// repository allows merge commits.
func doctorFeedChecks(ctx context.Context, d *doctorState, gh *issues.GitHub) []doctorCheck {
	var checks []doctorCheck
	if _, err := scanner.Load(d.git.Dir); err != nil {
		checks = append(checks, doctorCheck{level: doctorFail, msg: "scanners: " + err.Error(), fix: "fix or remove the file (docs/queue.md, Scanners and refill)"})
	}
	if n := wire.RefillNote(d.set); n != "" {
		checks = append(checks, doctorCheck{level: doctorOK, msg: "queue mode: " + n})
	}
	if len(d.set.PromoteTo) > 0 {
		if err := promote.CheckRepo(ctx, gh); err != nil {
			checks = append(checks, doctorCheck{level: doctorFail, msg: "promote: " + err.Error(), fix: "allow merge commits in the repository's settings, or unset PROMOTE_TO"})
		}
	}
	return checks
}

// print writes the report; markers are ✓ ✗ ! on a terminal and ok FAIL
// warn elsewhere.
func (d *doctorState) print() (fails, warns int) {
	s := d.a.S
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
	cmd.Env = d.a.GitEnv()
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
	git, err := cmdutil.OpenRepoFor(ctx, d.a, d.dir)
	if err != nil {
		d.add(doctorFail, fmt.Sprintf("repository: %v", err), "run claudopilot in your repository, or make one: git init")
		return
	}
	d.git = git
	if !cmdutil.PathWithin(git.Dir, d.dir) {
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

// checkSettings resolves the settings as run does (settings.Resolve:
// flags, environment, the settings files, the manifest's lines,
// defaults), reports every problem with its source, and shows where each
// value that is not a default came from.
func (d *doctorState) checkSettings(fs settings.Flags) {
	in := settings.Input{Scope: settings.Run, Flags: fs, Env: d.a.Env}
	if d.git != nil {
		in.Top = d.git.Dir
	}
	if m := d.manifest(); m != nil {
		in.Manifest = m
	}
	s, err := settings.Resolve(in)
	d.set = s // one bad line costs that line only: the rest is read and checked
	values := false
	var serr *settings.Error
	if errors.As(err, &serr) {
		for _, p := range serr.Problems {
			if p.Unreadable {
				d.add(doctorFail, "settings: "+p.String(), "fix or delete this line (the file is read as data, never run)")
				continue
			}
			values = true
			d.add(doctorFail, "settings: "+p.String(), "fix the value where it comes from")
		}
	}
	for _, n := range s.Notes {
		d.add(doctorWarn, "settings: "+n.String(), "")
	}
	for _, n := range s.DefaultNotes() {
		d.add(doctorOK, "settings: "+n, "")
	}
	if values {
		return
	}
	var from []string
	for _, v := range s.Set() {
		from = append(from, fmt.Sprintf("%s=%s (from %s)", v.Env, settings.ClipCmd(v.Raw), v.Src))
	}
	switch {
	case len(s.Read) > 0 && err != nil:
		d.add(doctorOK, "settings: the other lines valid ("+strings.Join(s.Read, ", ")+" read)", "", from...)
	case len(s.Read) > 0:
		d.add(doctorOK, "settings: valid ("+strings.Join(s.Read, ", ")+" read)", "", from...)
	default:
		d.add(doctorOK, "settings: valid (no "+settings.ConfigFile+")", "", from...)
	}
	if s.ProtectedPaths.Off {
		d.add(doctorWarn, fmt.Sprintf("protected files: off (PROTECTED_PATHS=none from %s): an agent's commit can change the settings, prompts and phase docs the next run reads", s.Source("PROTECTED_PATHS")), "unset PROTECTED_PATHS (docs/landing.md)")
	}
}

// checkBase finds the base branch by the base rule run applies
// (settings.Base), trunk guard included: what run refuses fails here.
func (d *doctorState) checkBase(ctx context.Context) {
	if d.git == nil || d.set == nil {
		return
	}
	b, err := d.set.Base(ctx, d.git, settings.MergeHere)
	var be *settings.BaseError
	if errors.As(err, &be) {
		switch be.Kind {
		case settings.BaseDetached:
			d.add(doctorFail, "base branch: HEAD is detached", "check out the branch to merge into, or set BASE_BRANCH in "+settings.ConfigFile)
			return
		case settings.BaseUnborn:
			d.add(doctorFail, be.Error(), "commit the roadmap: git add -A && git commit")
			return
		case settings.BaseMissing:
			d.add(doctorFail, be.Error(), "create it, or name another with --base or BASE_BRANCH")
			return
		case settings.BaseTrunk:
			d.add(doctorFail, fmt.Sprintf("base branch %s (%s): run refuses to merge into %s unless it is named", b.Branch, b.Src, b.Branch),
				fmt.Sprintf("pass --base %s (to doctor and run), or set BASE_BRANCH=%s in %s, or switch to another branch", b.Branch, b.Branch, settings.ConfigFile))
		}
	} else if err != nil {
		d.add(doctorFail, fmt.Sprintf("base branch: %v", err), "")
		return
	}
	tip, err := d.git.RevParse(ctx, "refs/heads/"+b.Branch)
	if err != nil {
		d.add(doctorFail, fmt.Sprintf("base branch %s: %v", b.Branch, err), "")
		return
	}
	d.base, d.baseTip = b.Branch, tip
	if be == nil {
		d.add(doctorOK, fmt.Sprintf("base branch %s (%s)", b.Branch, b.Src), "")
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

// checkAgent finds every program run starts (settings.Programs: the
// lanes' commands with LANES, else the agent and its supervisor; the
// reviewer), by the lookup run refuses to start without, and the gate
// and prepare commands, whose absence is a warning.
func (d *doctorState) checkAgent() {
	if d.set == nil {
		return
	}
	top := ""
	if d.git != nil {
		top = d.git.Dir
	}
	for _, p := range d.set.Programs() {
		if p.InPod {
			d.add(doctorOK, fmt.Sprintf("%s: %s (from %s) runs in the agents' pods (K8S_IMAGE=%s): not looked up here", p.What, settings.ClipCmd(p.Cmd), p.Src, d.set.K8s.Image), "")
			continue
		}
		d.commandCheck(p.What, p.Cmd, p.Src, top, doctorFail, p.Fix)
	}
	gate, src := strings.TrimSpace(d.set.Gate), d.set.Source("GATE_CMD").String()
	switch gate {
	case "", "true", ":":
		d.add(doctorWarn, fmt.Sprintf("gate: none (%q, from %s): phases merge without any check", gate, src),
			"put your test command in the manifest's **Gate:** line, or GATE_CMD in "+settings.ConfigFile)
	default:
		d.commandCheck("gate", gate, src, top, doctorWarn, "install it, or have WORKTREE_PREPARE_CMD make it")
	}
	if prep := strings.TrimSpace(d.set.Prepare); prep == "" {
		d.add(doctorOK, "prepare: none (worktrees start as plain checkouts)", "")
	} else {
		d.commandCheck("prepare", prep, d.set.Source("WORKTREE_PREPARE_CMD").String(), top, doctorWarn, "install it, or change WORKTREE_PREPARE_CMD")
	}
}

// checkCluster checks what AGENT_RUNNER=kubernetes needs beyond its
// settings: the cluster answers the driver's credentials and K8S_REMOTE
// can be read (docs/cluster.md).
func (d *doctorState) checkCluster(ctx context.Context) {
	if d.set == nil || d.set.AgentRunner != "kubernetes" || d.set.K8s.Namespace == "" || d.set.K8s.Remote == "" {
		return // not used, or a settings problem said already
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cluster, remote := wire.ProbeCluster(ctx, d.a.Cluster, d.set, d.git)
	if cluster != nil {
		d.add(doctorFail, "kubernetes: "+cluster.Error(), "check K8S_KUBECONFIG and K8S_CONTEXT, and that the driver's account may list, create and delete Jobs in K8S_NAMESPACE (docs/cluster.md)")
	} else {
		d.add(doctorOK, fmt.Sprintf("kubernetes: the cluster answers; Jobs in namespace %s can be listed", d.set.K8s.Namespace), "")
	}
	if remote != nil {
		d.add(doctorFail, "kubernetes: "+remote.Error(), "make K8S_REMOTE a git remote this machine can push to and the cluster can reach (docs/cluster.md)")
	} else if d.git != nil {
		d.add(doctorOK, "kubernetes: K8S_REMOTE "+d.set.K8s.Remote+" can be read", "")
	}
}

// commandCheck looks up the program a shell command line starts with, as
// run does (settings.Find).
func (d *doctorState) commandCheck(what, cmd, src, top string, level doctorLevel, fix string) {
	if strings.TrimSpace(cmd) == "" {
		d.add(doctorFail, fmt.Sprintf("%s: empty (from %s)", what, src), fix)
		return
	}
	if cmd == settings.ScriptAgent && level == doctorFail && what != "reviewer" {
		d.add(doctorOK, fmt.Sprintf("%s: the built-in script agent (from %s)", what, src), "")
		return
	}
	l := settings.Find(cmd, d.a.Getenv("PATH"), top)
	switch {
	case l.Unknown:
		d.add(doctorWarn, fmt.Sprintf("%s: %s (from %s): cannot tell which program it runs", what, settings.ClipCmd(cmd), src), "make sure it runs from a phase worktree")
	case l.Builtin:
		d.add(doctorOK, fmt.Sprintf("%s: %s (from %s)", what, settings.ClipCmd(cmd), src), "")
	case !l.Found:
		d.add(level, fmt.Sprintf("%s: %s (from %s): %s not found", what, settings.ClipCmd(cmd), src, l.Prog), fix)
	default:
		d.add(doctorOK, fmt.Sprintf("%s: %s (from %s; %s)", what, settings.ClipCmd(cmd), src, l.Path), "")
	}
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
		d.add(doctorFail, fmt.Sprintf("manifest %s: %s", d.rel(mpath), cmdutil.CountNoun(len(bad.Problems), "problem")),
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
	d.add(doctorOK, fmt.Sprintf("manifest %s: %s (%s)", d.rel(mpath), cmdutil.CountNoun(len(rm.Nodes), "phase"), cmdutil.CountsLine(counts)), "")
	for _, w := range rm.Warnings {
		d.add(doctorWarn, fmt.Sprintf("%s:%d: %s", d.rel(mpath), w.Line, w.Msg), "edit the manifest")
	}
	if d.git == nil || d.base == "" || !cmdutil.PathWithin(d.git.Dir, d.dir) {
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
	lockPath := state.LockPath(common)
	switch info, st := state.LockStatus(lockPath); st {
	case state.LockFree:
		d.add(doctorOK, "lock: free (no run going on)", "")
	case state.LockLive:
		d.add(doctorOK, "lock: "+cmdutil.LockHolder(info), "")
	case state.LockStale:
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
func (d *doctorState) rel(p string) string { return cmdutil.RelTo(d.a.Cwd, p) }

// checkSandbox reports the sandbox: FAIL when SANDBOX=bwrap cannot work
// here, WARN when SANDBOX=auto falls back to none (agents are then
// unconfined: docs/sandbox.md); when it is off, whether bubblewrap would
// work, recommending it. While SANDBOX has its default, the changed
// default is announced.
func (d *doctorState) checkSandbox(ctx context.Context) {
	if d.set == nil {
		return
	}
	src := d.set.Source("SANDBOX")
	if src.Kind == settings.FromDefault {
		d.add(doctorOK, "sandbox: "+wire.SandboxDefaultNote, "")
	}
	for _, n := range wire.DefaultNotes(d.set) {
		d.add(doctorOK, "default: "+n, "")
	}
	probe := (&sandbox.Config{}).Probe(ctx)
	switch {
	case d.set.Sandbox == sandbox.Bwrap && probe != nil:
		d.add(doctorFail, fmt.Sprintf("sandbox: SANDBOX=bwrap (from %s) cannot work here: %v", src, probe),
			"install bubblewrap (apt-get install bubblewrap) and allow user namespaces, or set SANDBOX=off")
	case d.set.Sandbox == sandbox.Bwrap:
		d.add(doctorOK, "sandbox: bwrap (agents can write only their worktree and branch)", "")
	case d.set.Sandbox == sandbox.Auto && probe != nil:
		d.add(doctorWarn, fmt.Sprintf("sandbox: SANDBOX=auto (from %s), but bubblewrap does not work here (%v): agents run unconfined", src, probe),
			"install bubblewrap (apt-get install bubblewrap) and allow user namespaces, or set SANDBOX=off to silence this (docs/sandbox.md)")
	case d.set.Sandbox == sandbox.Auto:
		d.add(doctorOK, fmt.Sprintf("sandbox: auto (from %s): bubblewrap works here; agents can write only their worktree and branch", src), "")
	case probe == nil:
		d.add(doctorOK, "sandbox: off; bubblewrap works here: SANDBOX=auto or bwrap (--sandbox) keeps agents inside their worktree (docs/sandbox.md)", "")
	default:
		d.add(doctorOK, "sandbox: off, and bubblewrap does not work here; to keep agents inside their worktree, install it and set SANDBOX=auto or bwrap (docs/sandbox.md)", "")
	}
	if d.set.Sandbox != sandbox.Off && probe == nil {
		d.checkSandboxNet(ctx)
	}
}

// checkSandboxNet reports SANDBOX_NET=outside where the sandbox works:
// FAIL when set and slirp4netns cannot work, WARN when it is the default
// and falls back to the host's network. The changed default is announced
// while SANDBOX_NET has it.
func (d *doctorState) checkSandboxNet(ctx context.Context) {
	if d.set.SandboxNetMode() != sandbox.NetOutside {
		return
	}
	src := d.set.Source("SANDBOX_NET")
	if src.Kind == settings.FromDefault {
		d.add(doctorOK, "sandbox: "+wire.SandboxNetDefaultNote, "")
	}
	err := wire.Slirp(ctx, &sandbox.Config{})
	switch {
	case err == nil:
		d.add(doctorOK, "sandbox: network outside (slirp4netns): outside addresses, not the host's loopback", "")
	case src.Kind == settings.FromDefault:
		d.add(doctorWarn, fmt.Sprintf("sandbox: SANDBOX_NET=outside needs slirp4netns (%v): sandboxed agents share the host's network, its loopback services too", err),
			"apt-get install slirp4netns, or set SANDBOX_NET=1 (or 0) to silence this (docs/sandbox.md)")
	default:
		d.add(doctorFail, fmt.Sprintf("sandbox: SANDBOX_NET=outside (from %s) cannot work here: %v", src, err),
			"apt-get install slirp4netns, or set SANDBOX_NET to 1 or 0")
	}
}

// checkBaseCheckout looks at the checkout of the base branch, where merges
// land: a move after a merge that did not finish, and uncommitted changes
// a merge may have to wait for.
func (d *doctorState) checkBaseCheckout(ctx context.Context) {
	if d.git == nil || d.base == "" {
		return
	}
	layout := d.layout
	if layout.Top == "" {
		layout.Top = d.git.Dir
	}
	if mv, err := land.Pending(layout); err != nil {
		d.add(doctorWarn, fmt.Sprintf("base checkout: %v", err), "")
	} else if mv != nil {
		d.add(doctorWarn, fmt.Sprintf("base checkout %s has not followed %s to %s yet: a merge's move of it is pending", d.rel(mv.Dir), d.base, cmdutil.Short(mv.New)),
			"the next `claudopilot run` (or the run going on, before its next merge) finishes it; do not commit there until then")
		return // its status shows the move's own changes until then
	}
	dir, ok, err := d.git.WorktreeOf(ctx, d.base)
	if err != nil || !ok {
		return
	}
	dirty, err := d.git.Dirty(ctx, dir)
	if err != nil {
		d.add(doctorWarn, fmt.Sprintf("base checkout: %v", err), "")
		return
	}
	dirty = dropPath(dirty, layout.ManifestRel()) // the driver writes states there itself
	if len(dirty) == 0 {
		d.add(doctorOK, fmt.Sprintf("base checkout %s is clean", d.rel(dir)), "")
		return
	}
	shown := dirty
	if len(shown) > 5 {
		shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(dirty)-5))
	}
	d.add(doctorWarn, fmt.Sprintf("base checkout %s has uncommitted changes: %s", d.rel(dir), strings.Join(shown, ", ")),
		"a merge that changes these files waits until they are committed, stashed or reverted there")
}

// dropPath drops p, and the driver's own folder, from paths.
func dropPath(paths []string, p string) []string {
	var out []string
	for _, q := range paths {
		if q != p && !strings.HasPrefix(q, ".claudopilot/") {
			out = append(out, q)
		}
	}
	return out
}
