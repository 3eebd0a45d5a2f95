package settings

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/claudopilot/claudopilot/pacer"
)

// ScriptAgent is the built-in agent that runs each phase doc's first sh
// block (work.ScriptAgent).
const ScriptAgent = "script"

// Program is a command the settings make a run start: the agents, the
// supervisors and the reviewer. A run refuses to start while one is
// missing; doctor checks each with the same words.
type Program struct {
	What string // "agent", "supervisor", "reviewer"; "lane ID agent" with LANES
	Cmd  string
	Src  string // the setting it came from
	Fix  string // how to fix it when missing
	// InPod: it runs in the agents' pods (AGENT_RUNNER=kubernetes:
	// K8S_IMAGE holds it), so it is not looked up here.
	InPod bool
}

// The fixes of a missing agent or supervisor, said by doctor and by run.
const (
	AgentFix      = `install it (and log in), or set AGENT_CMD (--agent); "script" runs each phase doc's sh block`
	SupervisorFix = "install it (and log in), or set SUPERVISOR_CMD (--supervisor)"
	ReviewerFix   = "install it, or set REVIEW_CMD (--review) to a command on PATH, or unset it to run without the review gate"
)

// Programs lists the commands a run with these settings starts: the
// lanes' agents and supervisors with LANES, else AGENT_CMD and a
// SUPERVISOR_CMD of its own; the reviewer when the review gate is on.
// ScriptAgent, built in, needs no lookup. (The gate and the prepare
// command are not among them: a worktree's prepare may make them.)
func (s *Settings) Programs() []Program {
	var out []Program
	pod := s.AgentRunner == "kubernetes" // the reviewer runs here all the same
	agent := func(what, cmd, src, fix string) {
		out = append(out, Program{What: what, Cmd: cmd, Src: src, Fix: fix, InPod: pod})
	}
	if len(s.Lanes) == 0 {
		agent("agent", s.Agent, s.Source("AGENT_CMD").String(), AgentFix)
		if s.Supervisor != s.Agent {
			agent("supervisor", s.Supervisor, s.Source("SUPERVISOR_CMD").String(), SupervisorFix)
		}
	}
	for _, l := range s.Lanes {
		env := pacer.EnvName(l.ID, "CMD")
		agent("lane "+l.ID+" agent", l.Cmd, env, "install it (and log in), or set "+env)
		if l.SupervisorCmd != l.Cmd {
			env := pacer.EnvName(l.ID, "SUPERVISOR_CMD")
			agent("lane "+l.ID+" supervisor", l.SupervisorCmd, env, "install it (and log in), or set "+env)
		}
	}
	if s.ReviewOn() {
		out = append(out, Program{What: "reviewer", Cmd: s.ReviewCmd, Src: s.Source("REVIEW_CMD").String(), Fix: ReviewerFix})
	}
	return out
}

// Located is what finding a program's command found.
type Located struct {
	Prog  string // the program the command line starts with ("" when it cannot be told)
	Path  string // where it was found
	Found bool
	// Unknown: the first word depends on expansions or is shell syntax;
	// Builtin: a shell builtin. Neither can be looked up.
	Unknown, Builtin bool
}

// Find looks up the program a command line starts with, as sh would with
// PATH=pathEnv; a name with a slash is taken from the repository's top
// (agents and gates run at a worktree's top, which holds the same files).
func Find(cmd, pathEnv, top string) Located {
	prog, ok := CommandWord(cmd)
	switch {
	case !ok:
		return Located{Unknown: true}
	case shellBuiltin(prog):
		return Located{Prog: prog, Builtin: true}
	}
	p, found := lookPathIn(prog, pathEnv, top)
	return Located{Prog: prog, Path: p, Found: found}
}

// Missing checks the programs and reports every one that is
// not there, as run refuses to start with them (a typo in --agent would
// otherwise cost every phase its attempts, each exiting 127).
func (s *Settings) Missing(pathEnv, top string) error {
	var probs []Problem
	for _, p := range s.Programs() {
		if p.Cmd == ScriptAgent || p.InPod {
			continue
		}
		if l := Find(p.Cmd, pathEnv, top); !l.Unknown && !l.Builtin && !l.Found {
			probs = append(probs, Problem{Msg: fmt.Sprintf("%s: %s (from %s): %s not found; fix: %s", p.What, ClipCmd(p.Cmd), p.Src, l.Prog, p.Fix)})
		}
	}
	if len(probs) > 0 {
		return &MissingError{Problems: probs}
	}
	return nil
}

// MissingError lists the required programs that are not there (exit 1).
type MissingError struct{ Problems []Problem }

func (e *MissingError) Error() string { return (&Error{Problems: e.Problems}).Error() }

// ClipCmd shortens a command line for a message.
func ClipCmd(cmd string) string {
	if r := []rune(cmd); len(r) > 60 {
		return string(r[:57]) + "..."
	}
	return cmd
}

// CommandWord returns the program a sh command line runs: its first word
// after VAR=value assignments (and exec or command). ok is false when that
// word depends on expansions or is shell syntax.
func CommandWord(cmd string) (string, bool) {
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

// lookPathIn finds an executable the way sh would with PATH=pathEnv; a
// name with a slash is taken from the repository's top.
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
