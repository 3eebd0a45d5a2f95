// Package completion is `claudopilot completion`: shell completion scripts
// generated from the command tree.
package completion

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
)

const completionAbout = `
Print a shell completion script for claudopilot: it completes the commands,
each command's flags, the topics of help and the shells of completion;
elsewhere it completes file names.

  bash   source <(claudopilot completion bash)       (in ~/.bashrc)
  zsh    source <(claudopilot completion zsh)        (in ~/.zshrc, after
         compinit), or save it as _claudopilot in a folder of $fpath
  fish   claudopilot completion fish > ~/.config/fish/completions/claudopilot.fish

The script is generated from the commands of this claudopilot, so print it
again after an upgrade.`

const completionExample = `  source <(claudopilot completion bash)
  claudopilot completion zsh > "${fpath[1]}/_claudopilot"
  claudopilot completion fish > ~/.config/fish/completions/claudopilot.fish`

// Options are what completion's arguments say.
type Options struct {
	App   *cmdutil.App
	Shell string
}

// NewCmd is `claudopilot completion`; runF runs the parsed options (Run
// when nil).
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("completion", "print a bash, zsh or fish completion script", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "completion", "completion bash|zsh|fish", completionAbout, completionExample)
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() != 1 {
		return nil, cmdutil.UsageErrorf("completion: name one shell: bash, zsh or fish")
	}
	return &Options{App: a, Shell: fs.Arg(0)}, nil
}

// Run prints the script for the shell, generated from the command tree.
func Run(ctx context.Context, o *Options) error {
	a := o.App
	cmds := completionCommands(ctx, a)
	var b bytes.Buffer
	switch o.Shell {
	case "bash":
		writeBashCompletion(&b, cmds)
	case "zsh":
		writeZshCompletion(&b, cmds)
	case "fish":
		writeFishCompletion(&b, cmds)
	default:
		return cmdutil.UsageErrorf("completion: unknown shell %q (want bash, zsh or fish)", o.Shell)
	}
	_, err := a.S.Out.Write(b.Bytes())
	return err
}

// flagInfo is one flag as a command's --help shows it.
type flagInfo struct {
	name  string // without the dashes
	short string // the one-letter form, or ""
	arg   string // the value's name ("string", "format"), "" for a boolean
	usage string
}

type completionCommand struct {
	name, summary string
	flags         []flagInfo
	args          []string // words completed as arguments; none: file names
}

// completionCommands lists the visible commands with their flags and the
// words their arguments take.
func completionCommands(ctx context.Context, a *cmdutil.App) []completionCommand {
	var out []completionCommand
	var names []string
	for _, c := range a.Commands() {
		if c.Hidden || !safeWord.MatchString(c.Name) {
			continue
		}
		names = append(names, c.Name)
		cc := completionCommand{name: c.Name, summary: c.Summary}
		if c.Name != "help" {
			cc.flags = commandFlags(ctx, a, c)
		}
		switch c.Name {
		case "completion":
			cc.args = []string{"bash", "zsh", "fish"}
		}
		out = append(out, cc)
	}
	for i := range out {
		if out[i].name == "help" {
			out[i].args = append(append([]string{}, names...), "exit-codes")
		}
	}
	return out
}

// commandFlags learns a command's flags from its help: it runs the command
// with --help, its output going to a buffer, and reads the --name words of
// the "Flags:" section. Every command builds its flag set with newFlags,
// whose usage prints pflag's FlagUsages there, and parseFlags returns before
// the command does anything else, so no command has to list its flags a
// second time for completion (and none can be forgotten). The help
// command is the exception: its arguments are topics, not --help.
func commandFlags(ctx context.Context, a *cmdutil.App, c cmdutil.Command) []flagInfo {
	var buf bytes.Buffer
	sub := *a
	sub.S = &cmdutil.Streams{In: strings.NewReader(""), Out: &buf, Err: io.Discard}
	_ = c.Run(ctx, &sub, []string{"--help"})
	return parseFlagUsages(buf.String())
}

// flagLine matches a line of pflag's FlagUsages:
//
//	-x, --name type        usage
//	    --keep-going[=true|false]   usage
var flagLine = regexp.MustCompile(`^\s+(?:-([A-Za-z0-9]), )?--([A-Za-z0-9][A-Za-z0-9_-]*)(\[=[^\]]*\])?(?: (\S+))?\s{2,}(.*)$`)

var safeWord = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// parseFlagUsages reads the flags of the "Flags:" sections of help text,
// each once, in order.
func parseFlagUsages(help string) []flagInfo {
	var out []flagInfo
	seen := map[string]bool{}
	in := false
	for line := range strings.SplitSeq(help, "\n") {
		switch {
		case line == "Flags:":
			in = true
			continue
		case strings.TrimSpace(line) == "":
			in = false
			continue
		case !in:
			continue
		}
		m := flagLine.FindStringSubmatch(line)
		if m == nil || seen[m[2]] {
			continue
		}
		seen[m[2]] = true
		f := flagInfo{short: m[1], name: m[2], usage: strings.TrimSpace(m[5])}
		if m[3] == "" {
			f.arg = m[4]
		}
		out = append(out, f)
	}
	return out
}

func commandNames(cmds []completionCommand) string {
	var ns []string
	for _, c := range cmds {
		ns = append(ns, c.name)
	}
	return strings.Join(ns, " ")
}

func writeBashCompletion(w io.Writer, cmds []completionCommand) {
	fmt.Fprintf(w, `# bash completion for claudopilot, made by 'claudopilot completion bash'.
# Load it with: source <(claudopilot completion bash)

_claudopilot() {
    local cur=${COMP_WORDS[COMP_CWORD]}
    COMPREPLY=()
    if [[ $COMP_CWORD -eq 1 ]]; then
        COMPREPLY=($(compgen -W '%s --help --version' -- "$cur"))
        return 0
    fi
    local flags='' args=''
    case ${COMP_WORDS[1]} in
`, commandNames(cmds))
	for _, c := range cmds {
		var fl []string
		for _, f := range c.flags {
			fl = append(fl, "--"+f.name)
			if f.short != "" {
				fl = append(fl, "-"+f.short)
			}
		}
		fl = append(fl, "--help")
		fmt.Fprintf(w, "    %s) flags='%s'; args='%s' ;;\n", c.name, strings.Join(fl, " "), strings.Join(c.args, " "))
	}
	fmt.Fprint(w, `    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    elif [[ -n $args ]]; then
        COMPREPLY=($(compgen -W "$args" -- "$cur"))
    fi
    return 0
}

complete -o default -F _claudopilot claudopilot
`)
}

// zshQuote makes s safe inside a single-quoted zsh word, and inside the
// [description] of an _arguments spec or the description of _describe.
func zshQuote(s string) string {
	s = strings.NewReplacer("'", `'\''`, "[", `\[`, "]", `\]`, "\n", " ").Replace(s)
	return s
}

func writeZshCompletion(w io.Writer, cmds []completionCommand) {
	fmt.Fprint(w, `#compdef claudopilot
# zsh completion for claudopilot, made by 'claudopilot completion zsh'.
# Load it with: source <(claudopilot completion zsh)   (after compinit)
# or save it as _claudopilot in a folder of $fpath.
compdef _claudopilot claudopilot

_claudopilot() {
  local -a commands
  commands=(
`)
	for _, c := range cmds {
		fmt.Fprintf(w, "    '%s:%s'\n", c.name, strings.ReplaceAll(c.summary, "'", `'\''`))
	}
	fmt.Fprint(w, `  )
  if (( CURRENT == 2 )); then
    _describe -t commands 'claudopilot command' commands
    return
  fi
  local cmd=$words[2]
  shift words
  (( CURRENT-- ))
  curcontext="${curcontext%:*:*}:claudopilot-$cmd:"
  case $cmd in
`)
	for _, c := range cmds {
		fmt.Fprintf(w, "    %s)\n      _arguments -s \\\n", c.name)
		for _, f := range c.flags {
			spec := "--" + f.name
			if f.arg != "" {
				spec += "="
			}
			spec += "[" + zshQuote(f.usage) + "]"
			if f.arg != "" {
				spec += ":" + zshQuote(f.arg) + ":"
			}
			if f.short != "" {
				fmt.Fprintf(w, "        '(-%s --%s)'{-%s,--%s}'%s' \\\n", f.short, f.name, f.short, f.name, strings.TrimPrefix(spec, "--"+f.name))
				continue
			}
			fmt.Fprintf(w, "        '%s' \\\n", spec)
		}
		fmt.Fprint(w, "        '--help[show help]' \\\n")
		if len(c.args) > 0 {
			fmt.Fprintf(w, "        '1:argument:(%s)'\n      ;;\n", strings.Join(c.args, " "))
		} else {
			fmt.Fprint(w, "        '*:file:_files'\n      ;;\n")
		}
	}
	fmt.Fprint(w, `  esac
}

# Run when autoloaded from $fpath, not when sourced.
if [ "$funcstack[1]" = "_claudopilot" ]; then
  _claudopilot "$@"
fi
`)
}

// fishQuote makes s one single-quoted fish word.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`, "\n", " ").Replace(s) + "'"
}

func writeFishCompletion(w io.Writer, cmds []completionCommand) {
	fmt.Fprint(w, `# fish completion for claudopilot, made by 'claudopilot completion fish'.
# Load it with: claudopilot completion fish | source
# or save it as ~/.config/fish/completions/claudopilot.fish

complete -c claudopilot -f -n __fish_use_subcommand -l help -d 'show help'
complete -c claudopilot -f -n __fish_use_subcommand -l version -d 'print the version'
`)
	for _, c := range cmds {
		fmt.Fprintf(w, "complete -c claudopilot -f -n __fish_use_subcommand -a %s -d %s\n", c.name, fishQuote(c.summary))
	}
	for _, c := range cmds {
		cond := fishQuote("__fish_seen_subcommand_from " + c.name)
		for _, f := range c.flags {
			line := fmt.Sprintf("complete -c claudopilot -n %s -l %s", cond, f.name)
			if f.short != "" {
				line += " -s " + f.short
			}
			if f.arg != "" {
				line += " -r"
			}
			fmt.Fprintf(w, "%s -d %s\n", line, fishQuote(f.usage))
		}
		fmt.Fprintf(w, "complete -c claudopilot -n %s -l help -d 'show help'\n", cond)
		if len(c.args) > 0 {
			fmt.Fprintf(w, "complete -c claudopilot -f -n %s -a %s\n", cond, fishQuote(strings.Join(c.args, " ")))
		}
	}
}

// FlagNames are the names of the flags command c's --help shows (what the
// completion scripts offer and the documentation must name).
func FlagNames(ctx context.Context, a *cmdutil.App, c cmdutil.Command) []string {
	var out []string
	for _, f := range commandFlags(ctx, a, c) {
		out = append(out, f.name)
	}
	return out
}
