package settings

import (
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/pacer"
	"github.com/claudopilot/claudopilot/protect"
	"github.com/claudopilot/claudopilot/sandbox"
)

// SourceKind is where a value came from, highest precedence first.
type SourceKind int

const (
	FromDefault SourceKind = iota
	FromFlag
	FromEnv
	FromFile
	FromManifest
	FromDriver // AGENT_CMD built by AGENT_DRIVER (Name: the driver's source)
)

// Source is where a value came from: a flag, the environment (Name: the
// variable, when an alias), a file and line, the manifest, or the default.
type Source struct {
	Kind SourceKind
	Name string // the flag; the alias read; the file, relative to the top; the driver
	Line int    // the file's line (0: none, e.g. a JSON file)
	// Via is the source of the setting a derived value came from.
	Via *Source
}

func (s Source) String() string {
	switch s.Kind {
	case FromFlag:
		return "--" + s.Name
	case FromEnv:
		if s.Name != "" {
			return "the environment (" + s.Name + ")"
		}
		return "the environment"
	case FromFile:
		if s.Line > 0 {
			return fmt.Sprintf("%s:%d", s.Name, s.Line)
		}
		return s.Name
	case FromManifest:
		return "the manifest"
	case FromDriver:
		return "AGENT_DRIVER=" + s.Name + " from " + s.Via.String()
	}
	return "the default"
}

// Problem is one thing wrong with the settings, with its source.
type Problem struct {
	Key, Val string // the knob and its value as written ("" for a file line)
	Src      Source
	Msg      string
	// Unreadable: a line of a settings file that cannot be read (exit
	// 3); otherwise a bad value (misuse, exit 64).
	Unreadable bool
}

func (p Problem) String() string {
	switch {
	case p.Unreadable:
		return p.Src.String() + ": " + p.Msg
	case p.Key != "":
		return fmt.Sprintf("%s=%q from %s: %s", p.Key, p.Val, p.Src, p.Msg)
	}
	return p.Msg
}

// Error lists every problem of the settings at once.
type Error struct{ Problems []Problem }

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// BuildError is a setting found wrong only when something is built on it
// (the engine's runners, the queue's client): the command line reports it
// as misuse (exit 64), like an Error of bad values. It lives here, not in
// the engine, so that the command line's exit codes do not link the engine
// (issue 23: the suite's link cost).
type BuildError struct{ Err error }

func (e *BuildError) Error() string { return e.Err.Error() }
func (e *BuildError) Unwrap() error { return e.Err }

// Unreadable is true when a settings file has a line that cannot be read
// (exit 3); else every problem is a bad value (exit 64).
func (e *Error) Unreadable() bool {
	for _, p := range e.Problems {
		if p.Unreadable {
			return true
		}
	}
	return false
}

// Flags are a command's parsed flags (a *pflag.FlagSet).
type Flags interface {
	Changed(name string) bool
	GetString(name string) (string, error)
	GetBool(name string) (bool, error)
}

// Input is what the settings are resolved from.
type Input struct {
	// Scope is the command's: Queue takes the queue's defaults.
	Scope Scope
	Flags Flags             // nil: none
	Env   map[string]string // the environment as given
	// Top is the repository's top level, where the settings files are;
	// "": no file is read.
	Top string
	// Manifest gives GATE_CMD and WORKTREE_PREPARE_CMD from its
	// **Gate:** and **Prepare:** lines; nil: none.
	Manifest *manifest.Manifest
	// Issues: the issue queue runs (queue, run --issues); its rules are
	// checked too.
	Issues bool
}

// Resolve applies the precedence (flags, the environment, the settings
// files, the manifest's lines, the defaults) to every knob, reads each
// value by its kind and checks the rules between them. Every problem is
// reported at once in an *Error; the settings returned hold every value
// that could be read, so doctor can go on checking the rest.
func Resolve(in Input) (*Settings, error) {
	s := &Settings{vals: map[string]Value{}}
	var files map[string]fileValue
	var probs []Problem
	if in.Top != "" {
		files, s.Notes, probs, s.Read = readFiles(in.Top, in.Env)
		s.Claudopilot = ClaudopilotFile(in.Top, in.Env)
		s.named = namedFiles(in.Top, in.Env)
		s.Notes = append(s.Notes, orchestratorNotes(in.Top)...)
	}
	s.Notes = append(s.Notes, retiredNotes(in.Env)...)
	ks := Knobs()
	for _, k := range ks {
		v, note, prob := pick(k, in, files)
		s.vals[k.Env] = v
		if note != nil {
			s.Notes = append(s.Notes, *note)
		}
		if prob != nil {
			probs = append(probs, *prob)
		}
	}
	s.readNotes(files)
	s.applyDriver()
	for _, k := range ks {
		v := s.vals[k.Env]
		typed, msg := parse(k, v.Raw)
		if msg != "" {
			probs = append(probs, Problem{Key: k.Env, Val: v.Raw, Src: v.Src, Msg: msg})
			typed, _ = parse(k, k.def(in.Scope)) // go on with the default
		}
		if k.to != nil {
			k.to(s, typed)
		}
	}
	probs = append(probs, s.derive(in, files)...)
	if len(probs) > 0 {
		return s, &Error{Problems: probs}
	}
	return s, nil
}

// CheckFlags checks the values of the flags given, before anything else
// is looked at: a bad flag is misuse even outside a repository.
func CheckFlags(fs Flags, sc Scope) error {
	_, err := Resolve(Input{Scope: sc, Flags: fs})
	e, ok := err.(*Error)
	if !ok {
		return nil
	}
	var mine []Problem
	for _, p := range e.Problems {
		if p.Src.Kind == FromFlag || p.Src.Kind == FromDriver && p.Src.Via.Kind == FromFlag {
			mine = append(mine, p)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	return &Error{Problems: mine}
}

func (k Knob) def(sc Scope) string {
	if sc == Queue && k.QueueDef != "" {
		return k.QueueDef
	}
	return k.Def
}

// pick takes knob k's value from the first source that sets it: under
// its name, its alias, or another tool's name for it (with a note).
func pick(k Knob, in Input, files map[string]fileValue) (Value, *Note, *Problem) {
	v, ok := pickOwn(k, in)
	if ok {
		return v, nil, nil
	}
	if v, note, prob, ok := pickRenamed(k, in.Env); ok || prob != nil {
		return v, note, prob
	}
	return pickLow(k, in, files), nil, nil
}

// pickOwn takes knob k's value from a flag or the environment.
func pickOwn(k Knob, in Input) (Value, bool) {
	if in.Flags != nil && k.Flag != "" && in.Flags.Changed(k.Flag) {
		v, _ := in.Flags.GetString(k.Flag)
		if k.Kind == Bool {
			v = "0"
			if b, _ := in.Flags.GetBool(k.Flag); b {
				v = "1"
			}
		}
		return Value{Raw: v, Src: Source{Kind: FromFlag, Name: k.Flag}}, true
	}
	if v, ok := in.Env[k.Env]; ok {
		return Value{Raw: v, Src: Source{Kind: FromEnv}}, true
	}
	if al := Aliases[k.Env]; al != "" {
		if v, ok := in.Env[al]; ok {
			return Value{Raw: v, Src: Source{Kind: FromEnv, Name: al}}, true
		}
	}
	return Value{}, false
}

// pickLow takes knob k's value from the files, the manifest or the
// default.
func pickLow(k Knob, in Input, files map[string]fileValue) Value {
	if f, ok := files[k.Env]; ok {
		return Value{Raw: f.v, Src: f.src}
	}
	if m := in.Manifest; m != nil {
		switch {
		case k.Env == "GATE_CMD" && m.Gate.Value != "":
			return Value{Raw: m.Gate.Value, Src: Source{Kind: FromManifest, Line: m.Gate.Line}}
		case k.Env == "WORKTREE_PREPARE_CMD" && m.Prepare.Value != "":
			return Value{Raw: m.Prepare.Value, Src: Source{Kind: FromManifest, Line: m.Prepare.Line}}
		}
	}
	return Value{Raw: k.def(in.Scope), Src: Source{Kind: FromDefault}}
}

// parse reads a raw value by the knob's kind; the message says what is
// wanted when it cannot. Numbers are read here, words by parseWord.
func parse(k Knob, raw string) (any, string) {
	v := strings.TrimSpace(raw)
	switch k.Kind {
	case Int:
		n, err := strconv.Atoi(v)
		if err != nil || n < k.Min {
			return 0, fmt.Sprintf("want a whole number ≥ %d", k.Min)
		}
		return n, ""
	case Bool:
		switch strings.ToLower(v) {
		case "1", "true", "yes", "on":
			return true, ""
		case "", "0", "false", "no", "off":
			return false, ""
		}
		return false, "want 1 or 0"
	case Seconds:
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
			return time.Duration(f * float64(time.Second)), ""
		}
		if d, err := time.ParseDuration(v); err == nil && d >= 0 {
			return d, ""
		}
		return time.Duration(0), "want seconds"
	case Dollars:
		f, err := strconv.ParseFloat(strings.TrimPrefix(v, "$"), 64)
		if err != nil || f < 0 {
			return 0.0, "want dollars ≥ 0, e.g. 25 or 2.50"
		}
		return f, ""
	case Number:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return 0.0, "want a number > 0"
		}
		return f, ""
	case Hours:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return time.Duration(0), "want a number of hours > 0"
		}
		return time.Duration(f * float64(time.Hour)), ""
	}
	return parseWord(k, v, raw)
}

// parseWord reads the kinds that are words: choices, lists, globs,
// expressions, the driver, the sandbox mode, the protected paths.
func parseWord(k Knob, v, raw string) (any, string) {
	switch k.Kind {
	case Choice:
		c := strings.ToLower(v)
		if c == "" {
			c = k.Def
		}
		for _, ok := range k.Choices {
			if c == ok {
				return c, ""
			}
		}
		return "", "want " + orList(k.Choices)
	case List:
		return splitList(v), ""
	case Globs:
		gs := splitList(v)
		for _, g := range gs {
			if !doublestar.ValidatePattern(g) {
				return gs, fmt.Sprintf("%q is not a valid glob", g)
			}
		}
		return gs, ""
	case Regexp:
		if raw == "" {
			return (*regexp.Regexp)(nil), ""
		}
		re, err := regexp.Compile(raw)
		if err != nil {
			return (*regexp.Regexp)(nil), fmt.Sprintf("not a regular expression: %v", err)
		}
		return re, ""
	case Driver:
		if _, ok := agentDrivers[v]; v != "" && !ok {
			return "", "want claude, codex or opencode (or set AGENT_CMD to the full command)"
		}
		return v, ""
	case Sandbox:
		mode, err := sandbox.ParseMode(raw)
		if err != nil {
			return "", "want auto, bwrap or off"
		}
		return mode, ""
	case Protect:
		rules, off, err := protect.ParseList(raw)
		if err != nil {
			return protect.Set{}, err.Error()
		}
		return protect.Set{Off: off, Rules: rules}, ""
	}
	return raw, ""
}

func orList(ws []string) string {
	if len(ws) < 2 {
		return strings.Join(ws, "")
	}
	return strings.Join(ws[:len(ws)-1], ", ") + " or " + ws[len(ws)-1]
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
}

// agentDrivers are the commands AGENT_DRIVER builds, as Claudopilot ran
// them: headless, with the tool's permission prompts off (a phase runs
// unattended in its own worktree). %s is the model option, or nothing.
var agentDrivers = map[string]struct{ cmd, model string }{
	"claude":   {"claude -p --permission-mode bypassPermissions --output-format stream-json --verbose%s", " --model %s"},
	"codex":    {"codex exec --json --dangerously-bypass-approvals-and-sandbox%s -", " --model %s"},
	"opencode": {`opencode run --dangerously-skip-permissions --format json%s "$(cat "$CLAUDOPILOT_PROMPT_FILE")"`, " --model %s"},
}

// applyDriver builds AGENT_CMD from AGENT_DRIVER and AGENT_MODEL when
// AGENT_CMD itself was not set anywhere: a command given in full wins.
func (s *Settings) applyDriver() {
	dv, mv := s.vals["AGENT_DRIVER"], s.vals["AGENT_MODEL"]
	driver, model := strings.TrimSpace(dv.Raw), strings.TrimSpace(mv.Raw)
	if s.vals["AGENT_CMD"].Src.Kind != FromDefault || driver == "" && model == "" {
		return
	}
	src := dv.Src
	if driver == "" {
		driver, src = "claude", mv.Src
	}
	d, ok := agentDrivers[driver]
	if !ok {
		return // AGENT_DRIVER's own check reports it
	}
	opt := ""
	if model != "" {
		opt = fmt.Sprintf(d.model, shellQuote(model))
	}
	s.vals["AGENT_CMD"] = Value{Raw: fmt.Sprintf(d.cmd, opt), Src: Source{Kind: FromDriver, Name: driver, Via: &src}}
}

// shellQuote quotes a word for sh when it needs it.
func shellQuote(w string) string {
	if w != "" && strings.IndexFunc(w, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@+=", r))
	}) < 0 {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// derive fills the derived fields and checks the rules between knobs.
func (s *Settings) derive(in Input, files map[string]fileValue) []Problem {
	var probs []Problem
	bad := func(env, msg string) {
		probs = append(probs, Problem{Src: s.Source(env), Msg: fmt.Sprintf("%s (from %s)", msg, s.Source(env))})
	}
	// One rule: the supervisor is the agent unless set.
	s.Supervisor = s.SupervisorSet
	if s.Supervisor == "" {
		s.Supervisor = s.Agent
	}
	s.Bootstrap, s.Build = strings.TrimSpace(s.Bootstrap), strings.TrimSpace(s.Build)
	if s.Source("GATE_SLOTS").Kind == FromDefault {
		// Two gates at once, but not more than the machine has cores.
		s.GateSlots = min(s.GateSlots, runtime.NumCPU())
	}
	s.ReviewCmd = strings.TrimSpace(s.ReviewCmd)
	if strings.TrimSpace(s.Agent) == "" {
		bad("AGENT_CMD", "AGENT_CMD is empty")
	}
	if len(s.ReviewLenses) == 0 {
		bad("REVIEW_LENSES", "REVIEW_LENSES names no lens")
	}
	if in.Issues {
		if s.Poll <= 0 {
			bad("POLL_SECONDS", "POLL_SECONDS must be more than 0")
		}
		if s.Agent == "script" || s.Supervisor == "script" {
			probs = append(probs, Problem{Msg: "the built-in script agent works on roadmap phases only; name an agent command for the queue"})
		}
	}
	probs = append(probs, s.kubeProblems()...)
	rw, err := sandbox.HomeRW(in.Env["HOME"], s.SandboxRW)
	if err != nil {
		probs = append(probs, Problem{Src: s.Source("SANDBOX_RW"), Msg: fmt.Sprintf("%v (from %s)", err, s.Source("SANDBOX_RW"))})
	}
	s.SandboxPaths = rw
	probs = append(probs, s.derivePlaces(in.Top)...)
	if s.Pace <= 0 {
		s.Pace = 300 * time.Second
	}
	s.QueuePoll = s.Poll
	if k, _ := Lookup("POLL_SECONDS"); s.Source("POLL_SECONDS").Kind == FromDefault {
		d, _ := parse(k, k.def(Queue))
		s.QueuePoll = d.(time.Duration)
	}
	get := func(k string) (string, bool) {
		switch k {
		case "AGENT_CMD":
			return s.Agent, s.Agent != ""
		case "SUPERVISOR_CMD":
			return s.SupervisorSet, s.SupervisorSet != ""
		}
		if v, ok := in.Env[k]; ok {
			return v, true
		}
		if f, ok := files[k]; ok {
			return f.v, true
		}
		if _, ok := s.vals[k]; ok && s.vals[k].Src.Kind != FromDefault {
			return s.vals[k].Raw, true
		}
		return "", false
	}
	lanes, err := pacer.Parse(s.LaneIDs, get)
	if err != nil {
		probs = append(probs, Problem{Msg: err.Error()})
	} else {
		probs = append(probs, laneProblems(lanes, in.Env, files)...)
		probs = append(probs, credentialFolders(lanes)...)
	}
	s.Lanes = lanes
	s.presetResume()
	return probs
}

// kubeProblems checks what AGENT_RUNNER=kubernetes needs.
func (s *Settings) kubeProblems() []Problem {
	if s.AgentRunner != "kubernetes" {
		return nil
	}
	var probs []Problem
	bad := func(env, msg string) {
		probs = append(probs, Problem{Src: s.Source(env), Msg: fmt.Sprintf("%s (from %s)", msg, s.Source(env))})
	}
	for _, kv := range [][2]string{{"K8S_NAMESPACE", s.K8s.Namespace}, {"K8S_IMAGE", s.K8s.Image}, {"K8S_REMOTE", s.K8s.Remote}} {
		if strings.TrimSpace(kv[1]) == "" {
			bad("AGENT_RUNNER", "AGENT_RUNNER=kubernetes needs "+kv[0])
		}
	}
	if s.Attach {
		// An agent in a pod has no terminal here to attach to.
		bad("ATTACH", "ATTACH=1 cannot be used with AGENT_RUNNER=kubernetes")
	}
	return probs
}

// presetResume: under the claude preset (AGENT_CMD built by AGENT_DRIVER
// claude, or its default) a worker is resumed in its session by default,
// as Claudopilot did: AGENT_RESUME_CMD is the agent's command with
// --resume. With LANES the preset is each lane's: a lane that runs the
// preset's AGENT_CMD (no CMD of its own) and has no RESUME_CMD resumes
// with it; a lane with its own command may be another CLI, so it resumes
// only as LANE_<id>_RESUME_CMD (or AGENT_RESUME_CMD) says.
func (s *Settings) presetResume() {
	agent := s.vals["AGENT_CMD"].Src
	claude := agent.Kind == FromDefault || agent.Kind == FromDriver && agent.Name == "claude"
	if s.vals["AGENT_RESUME_CMD"].Src.Kind != FromDefault || !claude {
		return
	}
	preset := s.Agent + " --resume {session}"
	if len(s.Lanes) == 0 {
		s.ResumeCmd, s.ResumePreset = preset, true
		return
	}
	for i, l := range s.Lanes {
		if l.Names["CMD"] == "" && l.Names["RESUME_CMD"] == "" && l.Cmd == s.Agent {
			s.Lanes[i].ResumeCmd, s.ResumePreset = preset, true
		}
	}
}
