// Package e2e is the end-to-end test harness shared by the test packages
// under e2e/ (one test binary each, so each has its own go test timeout
// and go test runs them on every core at once, #23): the testscript
// set-up and custom commands, the TestMain that makes each test binary
// the claudopilot command, and the helpers of the Go end-to-end tests.
// Only tests import it. testdata/README.md describes the scripts, the fake
// agents (testdata/agents, one place for every package) and the commands.
//
//	GIT_CONFIG_GLOBAL=/dev/null go test -count=1 ./e2e/...
//	go test -run TestScript/plan_ok -update ./e2e/cli   # rewrite golden sections
package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/internal/cli/root"
	"github.com/claudopilot/claudopilot/internal/gittest"
	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the golden sections of testdata/script/*.txtar that a cmp finds different")

// Main is the TestMain of every end-to-end test package: it runs m, then
// each of after (what the package's tests shared, such as a browser). Run
// as "claudopilot" (by a script, or through SelfAs) the test binary is the
// real command: root.Main's exit code, as package main's main gives it.
func Main(m *testing.M, after ...func()) {
	if filepath.Base(os.Args[0]) != "claudopilot" { // not run as the CLI
		moreParallel()
		// SANDBOX's default is auto (issue 21): the end-to-end tests run
		// unconfined unless they ask for the sandbox (--sandbox), as
		// their fake agents write TRACE files and meet outside their
		// worktrees.
		os.Setenv("SANDBOX", "off")
		// Every script's $WORK, repository and worktrees in memory when
		// TMPDIR is not set (gittest.MemTempDir says why: on this disk
		// each new file costs system time; the land tests took 0.89x the
		// CPU). The drivers, agents and sandboxes the tests start inherit
		// it; TMPDIR=/tmp go test ./e2e/... runs them on the disk. A short
		// prefix: a unix socket's path holds at most 107 bytes, and
		// attach_tmux's .claudopilot/state/attach/a.sock under
		// /dev/shm/claudopilot-e2e-N/go-test-scriptN/attach_tmux/repo
		// was 110 (bind: invalid argument).
		// With -testwork the folder stays, as $WORK should (its path is
		// in the log).
		removeMem := gittest.MemTempDir("e2e")
		if f := flag.Lookup("testwork"); f == nil || f.Value.String() != "true" {
			after = append(after, removeMem)
		}
	}
	testscript.Main(closing{m, after}, map[string]func(){
		// root.Main reads os.Args and the real streams; its result is the
		// command's exit code, as in the installed binary.
		"claudopilot": func() { os.Exit(root.Main()) },
	})
}

// closing runs the tests, then closes what they shared.
type closing struct {
	m     *testing.M
	after []func()
}

func (c closing) Run() int {
	code := c.m.Run()
	for _, f := range c.after {
		f()
	}
	return code
}

// Soak reports whether the long versions of the end-to-end tests run:
// CLAUDOPILOT_SOAK=1, as .ci/run sets it.
func Soak() bool { return os.Getenv("CLAUDOPILOT_SOAK") == "1" }

// moreParallel runs 4 parallel tests at a time (at least twice
// GOMAXPROCS) unless -test.parallel is given. The end-to-end tests spend
// much of their time waiting on agents, gates and timeouts, so two at a
// time (the default on 2 cores) leaves the CPU idle: on an otherwise idle
// 2-core machine the root package took 69 s with 2, 45 s with 4 (BENCHMARKS.md).
func moreParallel() {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(max(4, 2*runtime.GOMAXPROCS(0))))
	}
}

// RunScripts runs the scripts of dir (the package's testdata/script) as
// parallel subtests of t, with the fake agents on $PATH.
func RunScripts(t *testing.T, dir string) {
	// Parallel like the package's Go tests, so scripts and Go tests share
	// the -parallel slots from the start: run alone, TestScript held the
	// Go tests back until its last script ended, and the longest Go test
	// (TestKillLoop) then ran at the end on its own (#23: at load 22-40,
	// 56 s of the package's 442 s with one test running).
	t.Parallel()
	agents := Agents(t)
	end := time.Now().Add(Bound(t)) // waitfile's and waitgrep's default
	testscript.Run(t, testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       *update,
		// [soak]: CLAUDOPILOT_SOAK=1 (.ci/run sets it). A script whose
		// property a package test proves more cheaply starts with
		// "[!soak] skip 'proven by ...'", naming that test, so the README's
		// plain go test ./... keeps the few end-to-end runs per feature.
		Condition: func(cond string) (bool, error) {
			if cond == "soak" {
				return Soak(), nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Setup: func(e *testscript.Env) error { return setup(e, agents) },
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"gitrepo":     cmdGitrepo,
			"exitcode":    cmdExitcode,
			"waitfile":    cmdWaitfile(end),
			"waitgrep":    cmdWaitgrep(end),
			"json":        cmdJSON,
			"concurrency": cmdConcurrency,
			"gitsnap":     cmdGitsnap,
			"unwork":      cmdUnwork,
			"inproc":      cmdInproc,
		},
	})
}

// setup gives a script its environment: nothing may lean on the
// machine's git configuration or identity (each script builds its own
// repository), and the fake agents are on $PATH and in $AGENTS.
func setup(e *testscript.Env, agents string) error {
	e.Setenv("HOME", e.WorkDir)
	e.Setenv("XDG_CONFIG_HOME", filepath.Join(e.WorkDir, ".config"))
	e.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	e.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	// No `git maintenance run --auto` after each commit, merge and fetch
	// of the scripts, their agents and the drivers (gittest.NoAutoMaintenance
	// says why): 79 of the 1,427 git processes of e2e/cli's scripts.
	for _, kv := range gittest.NoAutoMaintenance() {
		k, v, _ := strings.Cut(kv, "=")
		e.Setenv(k, v)
	}
	e.Setenv("SANDBOX", "off") // unless a script asks for it (--sandbox)
	e.Setenv("GIT_AUTHOR_NAME", "Test Author")
	e.Setenv("GIT_AUTHOR_EMAIL", "author@example.com")
	e.Setenv("GIT_COMMITTER_NAME", "Test Committer")
	e.Setenv("GIT_COMMITTER_EMAIL", "committer@example.com")
	e.Setenv("LC_ALL", "C")
	e.Setenv("TERM", "dumb")
	e.Setenv("NO_COLOR", "1")
	e.Setenv("AGENTS", agents)
	e.Setenv("PATH", agents+string(os.PathListSeparator)+e.Getenv("PATH"))
	e.Values[setupPath{}] = e.Getenv("PATH")
	return nil
}

// setupPath keys the script's $PATH as setup left it (inproc refuses a
// changed one).
type setupPath struct{}

// Root is the module's root folder (the one holding go.mod), found from
// the test's working folder (its package's folder).
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = up
	}
}

// Agents is the absolute path of the fake agents (the module's
// testdata/agents), checked to be executable.
func Agents(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(Root(t), "testdata", "agents")
	checkAgents(t, dir)
	return dir
}

// checkAgents fails early, and clearly, when the fake agents lost their
// executable bit (they are run through $PATH by AGENT_CMD).
func checkAgents(t testing.TB, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".sh") || e.Name() == "lib.sh" { // lib.sh is sourced
			continue
		}
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm()&0o111 == 0 {
			t.Fatalf("%s is not executable: chmod +x testdata/agents/*.sh", filepath.Join(dir, e.Name()))
		}
	}
}

// gitrepo [DIR]
//
// Makes DIR (default: the current folder) a git repository on branch main
// with everything in it committed as "init".
func cmdGitrepo(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) > 1 {
		ts.Fatalf("usage: gitrepo [DIR]")
	}
	dir := "."
	if len(args) == 1 {
		dir = args[0]
	}
	dir = ts.MkAbs(dir)
	for _, a := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"commit", "-q", "-m", "init"},
	} {
		if err := ts.Exec("git", append([]string{"-C", dir}, a...)...); err != nil {
			ts.Fatalf("git %s: %v", strings.Join(a, " "), err)
		}
	}
}

// exitcode N PROG [ARGS...]
//
// Runs PROG as exec does and fails unless it exits with code N. Its stdout
// and stderr are then there for the stdout and stderr commands.
func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: bad code %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// waitfile [-timeout=DURATION] FILE...
//
// Waits until every FILE exists (default timeout: until shortly before go
// test's deadline, Bound: an upper bound for a busy machine, not a wait).
func cmdWaitfile(end time.Time) func(*testscript.TestScript, bool, []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) { waitfileUntil(ts, neg, args, end) }
}

func waitfileUntil(ts *testscript.TestScript, neg bool, args []string, end time.Time) {
	timeout := time.Until(end)
	if len(args) > 0 && strings.HasPrefix(args[0], "-timeout=") {
		d, err := time.ParseDuration(strings.TrimPrefix(args[0], "-timeout="))
		if err != nil {
			ts.Fatalf("waitfile: %v", err)
		}
		timeout, args = d, args[1:]
	}
	if neg || len(args) == 0 {
		ts.Fatalf("usage: waitfile [-timeout=DURATION] FILE...")
	}
	deadline := time.Now().Add(timeout)
	for _, f := range args {
		for {
			if _, err := os.Stat(ts.MkAbs(f)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				ts.Fatalf("waitfile: %s did not appear within %s", f, timeout)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// waitgrep [-timeout=DURATION] FILE REGEXP
//
// Waits until FILE has a line matching REGEXP (Go syntax; default timeout:
// until shortly before go test's deadline, Bound: an upper bound for a busy
// machine, not a wait). In the test process:
// a shell loop of grep and sleep started some 40 processes a second while
// it waited (#23: a process costs ~4 ms of CPU here).
func cmdWaitgrep(end time.Time) func(*testscript.TestScript, bool, []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) { waitgrepUntil(ts, neg, args, end) }
}

func waitgrepUntil(ts *testscript.TestScript, neg bool, args []string, end time.Time) {
	timeout := time.Until(end)
	if len(args) > 0 && strings.HasPrefix(args[0], "-timeout=") {
		d, err := time.ParseDuration(strings.TrimPrefix(args[0], "-timeout="))
		if err != nil {
			ts.Fatalf("waitgrep: %v", err)
		}
		timeout, args = d, args[1:]
	}
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitgrep [-timeout=DURATION] FILE REGEXP")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	if err != nil {
		ts.Fatalf("waitgrep: %v", err)
	}
	deadline := time.Now().Add(timeout)
	for {
		if b, err := os.ReadFile(ts.MkAbs(args[0])); err == nil && re.Match(b) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitgrep: no line of %s matched %q within %s", args[0], args[1], timeout)
		}
		// A poll of a file's contents, as waitfile polls a file: the file is
		// the event (written by another process), not a guess at a duration.
		time.Sleep(20 * time.Millisecond)
	}
}

// json [-lines] stdout|stderr|FILE [PATH WANT]
//
// Checks that the text is valid JSON (with -lines: that every non-empty line
// is). With PATH and WANT, checks one value: PATH is dot-separated object
// keys and array indices, "#" at the end means the length; WANT is compared
// with the value's compact JSON, or with the bare string for a string.
// "!" negates only the value check.
//
//	json stdout waves '[["phase-01"],["phase-02"]]'
//	json stdout 'phases.#' 3   (quoted: # starts a comment)
//	json stdout phases.0.id phase-01
func cmdJSON(ts *testscript.TestScript, neg bool, args []string) {
	lines := false
	if len(args) > 0 && args[0] == "-lines" {
		lines, args = true, args[1:]
	}
	if len(args) != 1 && len(args) != 3 || lines && len(args) != 1 || neg && len(args) != 3 {
		ts.Fatalf("usage: json [-lines] stdout|stderr|FILE [PATH WANT]")
	}
	text := readText(ts, args[0])
	if lines {
		n := 0
		for i, l := range strings.Split(text, "\n") {
			if strings.TrimSpace(l) == "" {
				continue
			}
			n++
			if !json.Valid([]byte(l)) {
				ts.Fatalf("json: %s line %d is not JSON: %s", args[0], i+1, l)
			}
		}
		if n == 0 {
			ts.Fatalf("json: %s holds no JSON lines", args[0])
		}
		return
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		ts.Fatalf("json: %s: %v", args[0], err)
	}
	if dec.More() {
		ts.Fatalf("json: %s holds more than one JSON value", args[0])
	}
	if len(args) == 1 {
		return
	}
	got, err := jsonPath(v, args[1])
	if err != nil {
		ts.Fatalf("json: %s: %v", args[0], err)
	}
	b, _ := json.Marshal(got)
	s, isStr := got.(string)
	match := string(b) == args[2] || isStr && s == args[2]
	if match == neg {
		if neg {
			ts.Fatalf("json: %s %s is %s, want anything else", args[0], args[1], b)
		}
		ts.Fatalf("json: %s %s is %s, want %s", args[0], args[1], b, args[2])
	}
}

func jsonPath(v any, path string) (any, error) {
	if path == "." || path == "" {
		return v, nil
	}
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			if k == "#" {
				return len(x), nil
			}
			var ok bool
			if v, ok = x[k]; !ok {
				return nil, fmt.Errorf("no key %q in %s", k, path)
			}
		case []any:
			if k == "#" {
				return len(x), nil
			}
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("bad index %q (length %d) in %s", k, len(x), path)
			}
			v = x[i]
		default:
			return nil, fmt.Errorf("%q: not an object or array in %s", k, path)
		}
	}
	return v, nil
}

// concurrency TRACE MIN MAX
//
// Reads a trace of "start ID NANOS" and "end ID NANOS" lines (as the fake
// agents write to $TRACE) and checks that the most agents running at one
// time was at least MIN and at most MAX, and that every start has its end.
func cmdConcurrency(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: concurrency TRACE MIN MAX")
	}
	lo, err1 := strconv.Atoi(args[1])
	hi, err2 := strconv.Atoi(args[2])
	if err1 != nil || err2 != nil {
		ts.Fatalf("concurrency: MIN and MAX must be numbers")
	}
	type ev struct {
		t     int64
		delta int
	}
	var evs []ev
	open := map[string]int{}
	for i, l := range strings.Split(ts.ReadFile(args[0]), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			ts.Fatalf("concurrency: %s:%d: want KIND ID NANOS, got %q", args[0], i+1, l)
		}
		t, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			ts.Fatalf("concurrency: %s:%d: bad time %q (does date support %%N?)", args[0], i+1, f[2])
		}
		switch f[0] {
		case "start":
			evs = append(evs, ev{t, +1})
			open[f[1]]++
		case "end":
			evs = append(evs, ev{t, -1})
			open[f[1]]--
		default:
			ts.Fatalf("concurrency: %s:%d: unknown kind %q", args[0], i+1, f[0])
		}
	}
	for id, n := range open {
		if n != 0 {
			ts.Fatalf("concurrency: %s has %d more starts than ends", id, n)
		}
	}
	// At one instant, ends go before starts: touching is not overlapping.
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].t != evs[j].t {
			return evs[i].t < evs[j].t
		}
		return evs[i].delta < evs[j].delta
	})
	cur, peak := 0, 0
	for _, e := range evs {
		cur += e.delta
		peak = max(peak, cur)
	}
	ts.Logf("concurrency: %d agents at most, over %d runs", peak, len(evs)/2)
	if peak < lo || peak > hi {
		ts.Fatalf("concurrency: at most %d agents ran at once, want between %d and %d", peak, lo, hi)
	}
}

// gitsnap FILE
//
// Writes a snapshot of the repository in the current folder to FILE (which
// should lie outside it): refs, HEAD, status, worktrees, stashes, the repo's
// config and info/exclude, and the hash of every file outside .git. Two
// snapshots compared with cmp prove that nothing changed in between.
func cmdGitsnap(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: gitsnap FILE")
	}
	var b bytes.Buffer
	git := func(a ...string) {
		fmt.Fprintf(&b, "## git %s\n", strings.Join(a, " "))
		cmd := exec.Command("git", a...)
		cmd.Dir = ts.MkAbs(".")
		cmd.Env = []string{"GIT_OPTIONAL_LOCKS=0"}
		for _, k := range []string{"PATH", "HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "LC_ALL"} {
			cmd.Env = append(cmd.Env, k+"="+ts.Getenv(k))
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			ts.Fatalf("gitsnap: git %s: %v\n%s", strings.Join(a, " "), err, out)
		}
		b.Write(out)
	}
	git("for-each-ref", "--format=%(refname) %(objectname)")
	git("symbolic-ref", "-q", "HEAD")
	git("rev-parse", "HEAD")
	git("status", "--porcelain=v1", "--ignored", "--untracked-files=all")
	git("worktree", "list", "--porcelain")
	git("stash", "list")
	gitDir := ts.MkAbs(".git")
	for _, f := range []string{"config", "info/exclude", "HEAD"} {
		data, err := os.ReadFile(filepath.Join(gitDir, f))
		fmt.Fprintf(&b, "## .git/%s (err %v)\n%s\n", f, err != nil, data)
	}
	ents, _ := os.ReadDir(gitDir)
	fmt.Fprintf(&b, "## .git entries\n")
	for _, e := range ents {
		if e.Name() != "index" && !strings.HasSuffix(e.Name(), ".lock") {
			fmt.Fprintln(&b, e.Name())
		}
	}
	fmt.Fprintf(&b, "## files\n")
	top := ts.MkAbs(".")
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(top, p)
		if d.IsDir() {
			if rel == ".git" {
				return filepath.SkipDir
			}
			fmt.Fprintf(&b, "%s/\n", rel)
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %x\n", rel, info.Mode(), sha256.Sum256(data))
		return nil
	})
	if err != nil {
		ts.Fatalf("gitsnap: %v", err)
	}
	if err := os.WriteFile(ts.MkAbs(args[0]), b.Bytes(), 0o666); err != nil {
		ts.Fatalf("gitsnap: %v", err)
	}
}

// unwork stdout|stderr|FILE DST
//
// Copies the text to DST with the value of $WORK replaced by the literal
// "$WORK", so output naming absolute paths can be compared with cmp (and
// rewritten by -update, which cmpenv does not support).
func cmdUnwork(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: unwork stdout|stderr|FILE DST")
	}
	text := strings.ReplaceAll(readText(ts, args[0]), ts.Getenv("WORK"), "$WORK")
	if err := os.WriteFile(ts.MkAbs(args[1]), []byte(text), 0o666); err != nil {
		ts.Fatalf("unwork: %v", err)
	}
}

// readText returns stdout, stderr or a file's contents, as cmp names them.
func readText(ts *testscript.TestScript, name string) string {
	return ts.ReadFile(name) // ReadFile knows "stdout" and "stderr"
}

// inproc [-exit=N] ARGS...
//
// Runs `claudopilot ARGS...` in the test process (root.RunIn) in the
// script's folder with its environment, and fails unless it exits with N
// (default 0; with !, any code but 0). Its stdout and stderr are then there
// for the stdout and stderr commands, the error message as the binary
// prints it (cmdutil.Exit). For the short commands that only read and print
// (plan, explain, status, logs, doctor, init, retry, help, completion): a
// driver start costs ~40 ms of CPU on the test VM and the scripts had ~100
// (#23). What only the binary does (hide the token, the signals, the
// terminal streams) is proven by the scripts that `exec claudopilot`; each
// command keeps at least one such line.
func cmdInproc(ts *testscript.TestScript, neg bool, args []string) {
	want := 0
	if len(args) > 0 && strings.HasPrefix(args[0], "-exit=") {
		n, err := strconv.Atoi(strings.TrimPrefix(args[0], "-exit="))
		if err != nil || neg {
			ts.Fatalf("usage: inproc [-exit=N] ARGS... (no ! with -exit)")
		}
		want, args = n, args[1:]
	}
	if ts.Getenv("PATH") != ts.Value(setupPath{}) {
		// A few lookups (bwrap, slirp4netns, git) use the process's PATH,
		// not the App's: a script that puts a fake on $PATH needs the
		// binary.
		ts.Fatalf("inproc: the script changed $PATH, which commands run in process would not see: use exec claudopilot")
	}
	var out, errb strings.Builder
	s := &cmdutil.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}
	err := root.RunIn(context.Background(), ts.MkAbs("."), args, s, scriptEnv(ts))
	got := cmdutil.Exit(&errb, err, nil) // as root.Main gives it
	fmt.Fprint(ts.Stdout(), out.String())
	fmt.Fprint(ts.Stderr(), errb.String())
	switch {
	case neg && got == 0:
		ts.Fatalf("claudopilot %s (in process) exited 0, want another code", strings.Join(args, " "))
	case !neg && got != want:
		ts.Fatalf("claudopilot %s (in process) exited %d, want %d", strings.Join(args, " "), got, want)
	}
}

// scriptEnv is the script's environment as its exec would pass it, read
// from testscript's own list (it has no exported one; go.mod pins the
// version, and a renamed field fails every inproc line loudly).
func scriptEnv(ts *testscript.TestScript) []string {
	f := reflect.ValueOf(ts).Elem().FieldByName("env")
	if !f.IsValid() || f.Kind() != reflect.Slice || f.Type().Elem().Kind() != reflect.String {
		ts.Fatalf("inproc: testscript.TestScript has no env []string field any more: read the environment another way")
	}
	env := make([]string, f.Len())
	for i := range env {
		env[i] = f.Index(i).String()
	}
	return env
}
