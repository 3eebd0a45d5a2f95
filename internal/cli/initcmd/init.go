// Package initcmd is `claudopilot init`: scaffold a roadmap and
// claudopilot.config.
package initcmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/worktree"
)

const initAbout = `
Scaffold claudopilot in the current git repository:

  <dir>/EXECUTION-MANIFEST.md   a manifest whose comments explain the grammar
  <dir>/phase-01-example.md     an example phase doc (and phase-02-example.md,
                                depending on phase-01, with --with-example)
  claudopilot.config            every run setting, commented out, with its
                                default (at the repository's top level)
  .git/info/exclude             gains /.claudopilot/, so the driver's
                                worktrees, logs and journal stay out of git

Existing files are never overwritten: each is reported as created or
skipped, and running init again changes nothing. The phase docs are only
written together with a new manifest. Each example doc holds an sh block, so
'claudopilot run --agent script' can run the roadmap without an AI tool.

--dir is taken from the current folder; without it the roadmap goes to
roadmap/ at the repository's top level.`

const initExample = `  claudopilot init
  claudopilot init --with-example && git add -A && git commit -m roadmap
  claudopilot init --dir plans/q3`

// Options are what init's flags say.
type Options struct {
	App         *cmdutil.App
	Dir         string // --dir as given ("": roadmap/ at the top level)
	WithExample bool
}

// NewCmd is `claudopilot init`; runF runs the parsed options (Run when
// nil).
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("init", "scaffold a roadmap, claudopilot.config and the .claudopilot/ exclude here", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "init", "init [--dir DIR] [--with-example]", initAbout, initExample)
	dirFlag := fs.String("dir", "", "the roadmap folder to create (default: roadmap/ at the repository's top level)")
	withExample := fs.Bool("with-example", false, "write two example phases, the second depending on the first")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, cmdutil.UsageErrorf("init takes no arguments (the roadmap folder is --dir), got %q", fs.Arg(0))
	}
	return &Options{App: a, Dir: *dirFlag, WithExample: *withExample}, nil
}

// scaffold counts and reports what init created and skipped.
type scaffold struct {
	a                *cmdutil.App
	created, skipped int
}

func (f *scaffold) report(made bool, path, why string) {
	if made {
		f.created++
		fmt.Fprintf(f.a.S.Out, "created %s\n", cmdutil.RelTo(f.a.Cwd, path))
		return
	}
	f.skipped++
	fmt.Fprintf(f.a.S.Out, "skipped %s: %s\n", cmdutil.RelTo(f.a.Cwd, path), why)
}

// Run writes the roadmap, claudopilot.config and the exclude, never over
// an existing file, and says what to do next.
func Run(ctx context.Context, o *Options) error {
	a := o.App
	git, err := a.OpenRepo(ctx, a.Cwd)
	if err != nil {
		if errors.Is(err, worktree.ErrNotRepo) {
			return fmt.Errorf("init: %s is not inside a git repository; create one first: git init", a.Cwd)
		}
		return fmt.Errorf("init: %w", err)
	}
	dir := filepath.Join(git.Dir, "roadmap")
	if o.Dir != "" {
		dir = o.Dir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(a.Cwd, dir)
		}
	}
	if !cmdutil.PathWithin(git.Dir, dir) {
		return fmt.Errorf("init: the roadmap folder %s is outside the repository %s", dir, git.Dir)
	}
	f := &scaffold{a: a}
	manifestPath := filepath.Join(dir, roadmap.ManifestName)
	if err := f.roadmap(dir, manifestPath, o.WithExample); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	configPath := filepath.Join(git.Dir, settings.ConfigFile)
	made, err := createNew(configPath, initConfig(settings.ForScope(settings.Run)))
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	f.report(made, configPath, "it exists")
	if err := f.exclude(ctx, git); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if f.created == 0 {
		fmt.Fprintln(a.S.Out, "nothing to do: claudopilot is already set up here")
		return nil
	}
	rel := cmdutil.RelTo(a.Cwd, dir)
	base := ""
	if b, err := git.CurrentBranch(ctx); err == nil && b != "" {
		base = " --base " + b
	}
	fmt.Fprintf(a.S.Out, `
Next:
  edit %s and the phase docs beside it
  git add %s %s && git commit -m "roadmap"
  claudopilot doctor %s%s    # check the setup
  claudopilot run %s%s --agent script    # runs each doc's sh block, no AI tool
`, cmdutil.RelTo(a.Cwd, manifestPath), rel, cmdutil.RelTo(a.Cwd, configPath), rel, base, rel, base)
	return nil
}

// roadmap writes the manifest first: its phase docs come only with a new
// manifest, as docs dropped beside someone's existing roadmap could become
// a second doc of one of their phases.
func (f *scaffold) roadmap(dir, manifestPath string, withExample bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	made, err := createNew(manifestPath, initManifest(withExample))
	if err != nil {
		return err
	}
	if !made {
		f.report(false, manifestPath, "it exists (the example phase docs are only written with a new manifest)")
		return nil
	}
	f.report(true, manifestPath, "")
	for _, d := range initDocs(withExample) {
		p := filepath.Join(dir, d.name)
		made, err := createNew(p, d.text)
		if err != nil {
			return err
		}
		f.report(made, p, "it exists")
	}
	return nil
}

// exclude hides /.claudopilot/ from git in the repository's
// info/exclude.
func (f *scaffold) exclude(ctx context.Context, git *worktree.Client) error {
	const pattern = "/.claudopilot/"
	common, err := git.CommonDir(ctx)
	if err != nil {
		return err
	}
	exclude := filepath.Join(common, "info", "exclude")
	if excludes(exclude, pattern) {
		f.skipped++
		fmt.Fprintf(f.a.S.Out, "skipped %s: it already hides %s\n", cmdutil.RelTo(f.a.Cwd, exclude), pattern)
		return nil
	}
	if err := git.Exclude(ctx, pattern); err != nil {
		return err
	}
	f.created++
	fmt.Fprintf(f.a.S.Out, "added %s to %s\n", pattern, cmdutil.RelTo(f.a.Cwd, exclude))
	return nil
}

// createNew writes a file that does not exist yet; made is false, and the
// file untouched, when it does.
func createNew(path, text string) (made bool, err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		os.Remove(path)
		return false, err
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return false, err
	}
	return true, nil
}

// excludes reports whether the exclude file already holds pattern as a line.
func excludes(file, pattern string) bool {
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.TrimSuffix(line, "\r") == pattern {
			return true
		}
	}
	return false
}

type initDoc struct{ name, text string }

func initDocs(withExample bool) []initDoc {
	docs := []initDoc{{"phase-01-example.md", initPhase01}}
	if withExample {
		docs = append(docs, initDoc{"phase-02-example.md", initPhase02})
	}
	return docs
}

func initManifest(withExample bool) string {
	phases := "1. [pending] **phase-01** — example: replace with your first phase (deps: none)\n"
	if withExample {
		phases = "1. [pending] **phase-01** — example: write a greeting (deps: none)\n" +
			"2. [pending] **phase-02** — example: build on phase-01's greeting (deps: phase-01)\n"
	}
	return initManifestHead + phases + initManifestTail
}

const initManifestHead = `# Execution Manifest

<!--
This is a claudopilot roadmap. 'claudopilot plan' checks it and shows its
waves; 'claudopilot doctor' checks the whole setup; 'claudopilot run' works
through it. The full grammar is docs/manifest.md in claudopilot's repository.

PHASES are list items ("1.", "-" or "*", any nesting), one line each:

    1. [pending] **phase-01** — what this phase does (deps: none)

  [state]   pending (to do), running, merged (done), failed or blocked
            (parked). Write [pending]; claudopilot changes the others. To
            retry a failed or blocked phase, set it back to [pending].
  **id**    bold, no spaces, commas, parentheses or backticks.
  title     after the dash; these annotations may go anywhere in it:
              (deps: phase-01, phase-02)   phases that must be merged first
              (owns: api/, pkg/x.go)       the only paths it may change
              (gate: make test-api)        its own gate instead of **Gate:**
              (est: 90m)                   an estimate for the critical path

Every phase has a doc beside this file, <id>-<slug>.md or <id>.md: the
agent's task. An agent works on it in its own worktree and branch
(auto/<id>) and, when done, renames the doc to DONE_<same name>. Green work
is merged into the base branch one phase at a time.

FILE-LEVEL LINES, outside lists:

  **Status:** in-progress   set to complete when every phase is merged
  **Gate:** go test ./...   must pass before a phase merges (GATE_CMD)
  **Prepare:** npm ci       runs once in each new worktree
                            (WORKTREE_PREPARE_CMD)

claudopilot.config at the repository root and the environment override the
Gate and Prepare lines.

CHECKPOINTS: an HTML comment whose text starts with LOOP-CHECKPOINT: and a
note, placed between two phases, holds back every phase listed below it;
once nothing above it is left to run, the run stops (exit 2) so you can
review. Delete the comment to go on.

Everything else (headings, prose, other lists, comments like this one) is
kept as written and ignored.
-->

**Status:** in-progress

<!-- Replace "true" (no check at all) with your test command. -->
**Gate:** true

## Phases

`

const initManifestTail = `
## Notes

Write anything here: claudopilot reads only the phase lines and the
Status, Gate and Prepare lines above.
`

const initPhase01 = "# phase-01: example\n" + `
Replace this doc with the task of your first phase: what to build, where,
and how to tell that it is done. The agent gets it as its assignment (the
path is in $CLAUDOPILOT_PHASE_DOC) and works in its own worktree, on branch
auto/phase-01. When it is done it commits its work and renames this file to
DONE_phase-01-example.md; claudopilot then runs the gate and merges.

With 'claudopilot run --agent script' no AI tool is involved: the built-in
script agent runs the first sh block below in the worktree and, when it
exits 0, renames the doc and commits. This one writes a file:

` + "```sh\n" + `mkdir -p hello
echo "hello from phase-01" > hello/phase-01.txt
` + "```\n"

const initPhase02 = "# phase-02: example\n" + `
This phase depends on phase-01 (see its deps in the manifest), so it starts
only once phase-01 is merged, and its worktree begins with phase-01's work.

The sh block the script agent runs (claudopilot run --agent script):

` + "```sh\n" + `test -f hello/phase-01.txt   # phase-01's work is here
cp hello/phase-01.txt hello/phase-02.txt
echo "and from phase-02, which ran after it" >> hello/phase-02.txt
` + "```\n"

// initConfig is claudopilot.config with every run setting commented out at
// its default.
func initConfig(ks []settings.Knob) string {
	var b strings.Builder
	b.WriteString(`# claudopilot.config: settings of claudopilot for this repository.
#
# KEY=VALUE lines; # starts a comment. The file is read, never run as shell:
# no expansion, no commands; one pair of quotes around a value is dropped.
# Flags and environment variables win over this file; this file wins over
# the manifest's **Gate:** and **Prepare:** lines. Every setting is shown
# commented out with its default: remove the # to change one.
`)
	for _, k := range ks {
		fmt.Fprintf(&b, "\n# %s (--%s)\n#%s=%s\n", k.Help, k.Flag, k.Env, k.Def)
	}
	return b.String()
}
