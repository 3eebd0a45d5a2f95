package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/internal/gittest"
	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/worktree"
)

// needBwrap skips a test only when bubblewrap is missing (CI installs it).
func needBwrap(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap (bwrap) is not installed: the sandbox tests need it (apt-get install bubblewrap)")
	}
	needGit(t)
}

func needGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
}

func testEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "CLAUDOPILOT_") {
			env = append(env, kv)
		}
	}
	env = append(env, gittest.NoAutoMaintenance()...)
	return append(env, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com")
}

// repo is a repository with main checked out and two phase worktrees laid
// out as the driver lays them out.
type repo struct {
	top, p1, p2 string
	git         *worktree.Client
	env         []string
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	ctx := context.Background()
	r := &repo{top: Real(filepath.Join(t.TempDir(), "repo")), env: testEnv()}
	templates.Copy(t, "repo", r.top, func(dir string) error { return makeRepo(dir, r.env) })
	r.p1 = filepath.Join(r.top, ".claudopilot", "worktrees", "p1")
	r.p2 = filepath.Join(r.top, ".claudopilot", "worktrees", "p2")
	if err := relink(r.top); err != nil {
		t.Fatal(err)
	}
	var err error
	if r.git, err = worktree.Open(ctx, r.top, r.env); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestMain makes newRepo's repository once for the test binary
// (templates).
func TestMain(m *testing.M) {
	if top := os.Getenv(watchChildEnv); top != "" {
		os.Exit(watchChild(top)) // TestKilledWatchLeavesNothing's driver
	}
	gittest.RunWithTemplates(m, "sandbox-templates-", func(t *gittest.Templates) { templates = t })
}

// templates holds newRepo's repository, made once and copied: its init,
// add, commit, branch and two worktree adds were about 12 processes a
// test.
var templates *gittest.Templates

// makeRepo makes newRepo's repository at top: main with f committed,
// release, and worktrees p1 and p2 (p2 with an untracked secret).
func makeRepo(top string, env []string) error {
	if err := os.MkdirAll(top, 0o755); err != nil {
		return err
	}
	run := func(args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = top, env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %w\n%s", args, err, out)
		}
		return nil
	}
	if err := run("init", "-q", "-b", "main"); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(top, "f"), []byte("base\n"), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{{"add", "f"}, {"commit", "-qm", "init"}, {"branch", "release"},
		{"worktree", "add", "-q", "-b", "auto/p1", filepath.Join(top, ".claudopilot", "worktrees", "p1")},
		{"worktree", "add", "-q", "-b", "auto/p2", filepath.Join(top, ".claudopilot", "worktrees", "p2")}} {
		if err := run(args...); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(top, ".claudopilot", "worktrees", "p2", "secret"), []byte("p2's work\n"), 0o644)
}

// relink points a copied repository's worktrees (all in
// .claudopilot/worktrees/) and their admin folders at each other again:
// git keeps both links as absolute paths, the template's.
func relink(top string) error {
	admins, err := filepath.Glob(filepath.Join(top, ".git", "worktrees", "*"))
	if err != nil {
		return err
	}
	for _, admin := range admins {
		wt := filepath.Join(top, ".claudopilot", "worktrees", filepath.Base(admin))
		if err := os.WriteFile(filepath.Join(admin, "gitdir"), []byte(filepath.Join(wt, ".git")+"\n"), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+admin+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (r *repo) gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, r.env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}

func (r *repo) rev(t *testing.T, ref string) string {
	t.Helper()
	sha, err := r.git.RevParse(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

// hostile tries what issue 13 found agents could do, records each
// attempt's outcome in the worktree, and then does its own work.
const hostile = `
echo own > own && git add own && git commit -qm "p1 work"
try() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name=ok"; else echo "$name=denied"; fi >> result; }
try write-base sh -c 'echo stray > "$TOP/stray"'
try write-other sh -c 'echo stray > "$P2/stray"'
try read-other cat "$P2/secret"
try update-base git update-ref refs/heads/main HEAD
try push-base git push -q . HEAD:refs/heads/main
try push-release git push -q . HEAD:refs/heads/release
try branch-base git branch -f main HEAD
try read-driver cat /proc/$DRIVER/environ
try write-git-config git config core.hooksPath /tmp
try write-tmp sh -c 'echo x > /tmp/own && cat /tmp/own'
git update-ref refs/heads/auto/p2 HEAD
setsid sh -c 'exec sleep "$MARK"' </dev/null >/dev/null 2>&1 &
git add result && git commit -qm "p1 result"
`

func TestJailConfinesAHostileAgent(t *testing.T) {
	needBwrap(t)
	ctx := context.Background()
	r := newRepo(t)
	home := t.TempDir()
	c := &Config{Net: true, Hide: []string{r.top}, RW: []string{filepath.Join(home, ".claude")}}
	os.MkdirAll(filepath.Join(home, ".claude"), 0o755)
	base, p2tip := r.rev(t, "refs/heads/main"), r.rev(t, "refs/heads/auto/p2")

	j, err := c.Enter(ctx, r.git, r.p1, "auto/p1", filepath.Join(r.top, ".claudopilot", "sandbox", "p1"), "")
	if err != nil {
		t.Fatal(err)
	}
	argv := append(j.Wrap(), "/bin/sh", "-c", hostile)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = r.p1
	// A number of this process's own: a second suite running this test at
	// the same time is not taken for a survivor.
	mark := strconv.Itoa(31415 + 2*(os.Getpid()%10000))
	cmd.Env = append(r.env, "TOP="+r.top, "P2="+r.p2, "HOME="+home, "DRIVER="+strconv.Itoa(os.Getpid()), "MARK="+mark)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sandboxed agent: %v\n%s", err, out)
	}
	// The namespace's init has exited: the kernel killed every process in
	// it before bwrap's wait returned, the setsid daemon included.
	if pids := findCmdline("sleep\x00" + mark); len(pids) > 0 {
		t.Errorf("the setsid daemon outlived the sandbox: pids %v", pids)
	}
	notes, err := j.Leave(ctx, r.git)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(r.p1, "result"))
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{"write-base=denied", "write-other=denied", "read-other=denied", "update-base=denied",
		"push-base=denied", "push-release=denied", "branch-base=denied", "read-driver=denied", "write-git-config=denied", "write-tmp=ok"} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("result lacks %s:\n%s", want, got)
		}
	}
	for _, p := range []string{filepath.Join(r.top, "stray"), filepath.Join(r.p2, "stray")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	if now := r.rev(t, "refs/heads/release"); now != base {
		t.Errorf("release moved from %s to %s", base, now)
	}
	if now := r.rev(t, "refs/heads/main"); now != base {
		t.Errorf("main moved from %s to %s", base, now)
	}
	if now := r.rev(t, "refs/heads/auto/p2"); now != p2tip {
		t.Errorf("auto/p2 moved from %s to %s", p2tip, now)
	}
	// The agent's own commit reached its real branch.
	if msg, err := r.git.Git(ctx, "log", "-2", "--format=%s", "refs/heads/auto/p1"); err != nil || msg != "p1 result\np1 work" {
		t.Errorf("auto/p1's tip is %q (%v), want the agent's commit", msg, err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "refs/heads/auto/p2") {
		t.Errorf("notes = %q, want one naming the discarded refs/heads/auto/p2", notes)
	}
}

func TestLeaveRestoresTheWorktreeLinks(t *testing.T) {
	needBwrap(t)
	ctx := context.Background()
	r := newRepo(t)
	c := &Config{Hide: []string{r.top}}
	j, err := c.Enter(ctx, r.git, r.p1, "auto/p1", filepath.Join(r.top, ".claudopilot", "sandbox", "p1"), "")
	if err != nil {
		t.Fatal(err)
	}
	// A .git pointing at a repository of the agent's would have the
	// driver run its hooks outside the sandbox.
	script := `mkdir -p evil && git init -q evil && echo "gitdir: $PWD/evil/.git" > .git && echo bogus > "$ADMIN/commondir"`
	argv := append(j.Wrap(), "/bin/sh", "-c", script)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = r.p1, append(r.env, "ADMIN="+filepath.Join(r.top, ".git", "worktrees", "p1"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sandboxed agent: %v\n%s", err, out)
	}
	notes, err := j.Leave(ctx, r.git)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 2 {
		t.Errorf("notes = %q, want the .git file and commondir restored", notes)
	}
	if top, err := r.git.GitIn(ctx, r.p1, "rev-parse", "--git-common-dir"); err != nil || Real(top) != filepath.Join(r.top, ".git") {
		t.Errorf("after Leave the worktree's common dir is %q (%v)", top, err)
	}
}

func TestProbe(t *testing.T) {
	needBwrap(t)
	if err := (&Config{}).Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := (&Config{Bwrap: "/nonexistent/bwrap"}).Probe(context.Background()); err == nil {
		t.Fatal("a missing bwrap probed fine")
	}
}

// A probe that fails once and then works is a working sandbox: bwrap's
// loopback set-up failed now and then at load ~40 ("loopback: Failed
// RTM_NEWADDR"), and one failed probe sent SANDBOX=auto unconfined and
// SANDBOX_NET's default onto the host's network. A bwrap that always fails
// is still refused, after two tries.
func TestProbeTriesTwice(t *testing.T) {
	dir := t.TempDir()
	bw := filepath.Join(dir, "bwrap")
	script := "#!/bin/sh\necho x >> " + filepath.Join(dir, "tries") + "\n" +
		"[ \"$(wc -l < " + filepath.Join(dir, "tries") + ")\" -ge $FAILS_UNTIL ] && exit 0\n" +
		"echo 'bwrap: loopback: Failed RTM_NEWADDR: No child processes' >&2; exit 1\n"
	if err := os.WriteFile(bw, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		until string
		ok    bool
		tries int
	}{{"2", true, 2}, {"9", false, 2}} {
		os.Remove(filepath.Join(dir, "tries"))
		t.Setenv("FAILS_UNTIL", tc.until)
		err := (&Config{Bwrap: bw}).Probe(context.Background())
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), "RTM_NEWADDR")) {
			t.Errorf("fails until try %s: Probe = %v, want ok %v (with bwrap's words)", tc.until, err, tc.ok)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "tries"))
		if n := strings.Count(string(b), "x"); n != tc.tries {
			t.Errorf("fails until try %s: bwrap ran %d times, want %d", tc.until, n, tc.tries)
		}
	}
}

// findCmdline lists the pids whose command line starts with prefix
// (arguments separated by NUL).
func findCmdline(prefix string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.HasPrefix(string(b), prefix) {
			out = append(out, pid)
		}
	}
	return out
}

// BenchmarkStart measures what the sandbox adds to starting an agent:
// "sh -c true" alone (bare); under bwrap with a phase's full set of mounts
// (bwrap); and that plus Enter and Leave, which run per attempt too
// (attempt: two git calls, the private ref and object folders, the link
// and admin folder checks). commit is an attempt whose process commits a
// file, so Leave brings its three objects into the repository (three git
// processes, issue 21 §3) and moves its branch.
func BenchmarkStart(b *testing.B) {
	needBwrap(b)
	ctx := context.Background()
	dir := b.TempDir()
	env := testEnv()
	top := Real(filepath.Join(dir, "repo"))
	for _, args := range [][]string{{"init", "-q", "-b", "main", top}, {"-C", top, "commit", "-q", "--allow-empty", "-m", "init"},
		{"-C", top, "worktree", "add", "-q", "-b", "auto/p1", filepath.Join(top, ".claudopilot", "worktrees", "p1")}} {
		cmd := exec.Command("git", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	g, err := worktree.Open(ctx, top, env)
	if err != nil {
		b.Fatal(err)
	}
	wt := filepath.Join(top, ".claudopilot", "worktrees", "p1")
	home, _ := os.UserHomeDir()
	rw, _ := HomeRW(home, "")
	c := &Config{Net: true, Hide: []string{top}, RW: rw}
	script := "true"
	run := func(b *testing.B, wrap func() ([]string, func())) {
		for b.Loop() {
			prefix, done := wrap()
			argv := append(prefix, "/bin/sh", "-c", script)
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Dir = wt
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %v\n%s", argv, err, out)
			}
			done()
		}
	}
	b.Run("bare", func(b *testing.B) {
		run(b, func() ([]string, func()) { return nil, func() {} })
	})
	j, err := c.Enter(ctx, g, wt, "auto/p1", filepath.Join(top, ".claudopilot", "sandbox", "p1"), "")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("bwrap", func(b *testing.B) {
		run(b, func() ([]string, func()) { return j.Wrap(), func() {} })
	})
	if _, err := j.Leave(ctx, g); err != nil {
		b.Fatal(err)
	}
	attempt := func() ([]string, func()) {
		// Enter and Leave included: they are per attempt too.
		j, err := c.Enter(ctx, g, wt, "auto/p1", filepath.Join(top, ".claudopilot", "sandbox", "p1"), "")
		if err != nil {
			b.Fatal(err)
		}
		return j.Wrap(), func() {
			if _, err := j.Leave(ctx, g); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("attempt", func(b *testing.B) { run(b, attempt) })
	script = `date +%s%N > f && git add f && git -c user.name=b -c user.email=b@example.com commit -qm b`
	b.Run("commit", func(b *testing.B) { run(b, attempt) })
}

func TestJailNetwork(t *testing.T) {
	needBwrap(t)
	for _, net := range []bool{true, false} {
		c := &Config{Net: net}
		argv := c.Args(Attempt{}, "/bin/sh", "-c", "grep -c : /proc/net/dev")
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("net=%v: %v\n%s", net, err, out)
		}
		// One line per interface holds ':'; the headers hold none.
		// Without the network only lo is left.
		n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
		if !net && n != 1 {
			t.Errorf("SANDBOX_NET=0: %d interfaces, want lo alone", n)
		}
		if net && n < 2 {
			t.Logf("the host has %d interfaces; cannot tell shared from private", n)
		}
	}
}

// An agent stopped by the driver (here its wall-clock timeout) goes with
// everything it started, a setsid daemon included, and Run returns.
func TestJailTimeoutStopsEverything(t *testing.T) {
	needBwrap(t)
	ctx := context.Background()
	r := newRepo(t)
	c := &Config{Hide: []string{r.top}}
	j, err := c.Enter(ctx, r.git, r.p1, "auto/p1", filepath.Join(r.top, ".claudopilot", "sandbox", "p1"), "")
	if err != nil {
		t.Fatal(err)
	}
	// Numbers of this process's own: another suite running this test at
	// the same time must not be found (or find ours).
	agent, daemon := strconv.Itoa(31420+2*(os.Getpid()%10000)), strconv.Itoa(31421+2*(os.Getpid()%10000))
	res := proc.Run(ctx, proc.Spec{
		Command: `setsid sh -c 'exec sleep ` + daemon + `' </dev/null >/dev/null 2>&1 & exec sleep ` + agent,
		Dir:     r.p1, Env: r.env, Wrap: j.Wrap(), LogPath: filepath.Join(t.TempDir(), "log"),
		Timeout: time.Second, KillGrace: time.Second,
	})
	if res.Reason != proc.ReasonTimeout {
		t.Fatalf("Reason = %q (%v), want timeout", res.Reason, res.Err)
	}
	if pids := append(findCmdline("sleep\x00"+agent), findCmdline("sleep\x00"+daemon)...); len(pids) > 0 {
		t.Errorf("processes outlived the stopped sandbox: %v", pids)
	}
	if _, err := j.Leave(ctx, r.git); err != nil {
		t.Fatal(err)
	}
}

// SANDBOX_NET=outside (issue 21): with slirp4netns in front of the
// sandbox's own network namespace, a listener on the host's loopback is
// out of reach and one on a non-loopback address of the host is reached;
// the command's standard input and exit code come through. No traffic
// leaves this machine.
func TestJailNetworkOutside(t *testing.T) {
	needBwrap(t)
	slirp, err := exec.LookPath("slirp4netns")
	if err != nil {
		t.Skip("slirp4netns is not installed")
	}
	t.Parallel()
	loop := acceptCount(t, "127.0.0.1")
	host := hostIPv4()
	if host == "" {
		t.Skip("no non-loopback address here")
	}
	other := acceptCount(t, host)
	c := &Config{Outside: slirp}
	script := `read -r x; echo "in=$x"; for a in "$@"; do GIT_TERMINAL_PROMPT=0 git ls-remote "http://$a/x.git" >/dev/null 2>&1; done; exit 7`
	argv := c.Args(Attempt{}, "/bin/sh", "-c", script, "sh", loop.addr, other.addr)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = strings.NewReader("prompt\n")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("exit: %v, want 7\n%s", err, out)
	}
	if !strings.Contains(string(out), "in=prompt") {
		t.Errorf("standard input did not come through: %s", out)
	}
	if n := loop.n.Load(); n != 0 {
		t.Errorf("the host's loopback was reached (%d connections)", n)
	}
	if n := other.n.Load(); n == 0 {
		t.Errorf("the host's address %s was not reached", host)
	}
	// A slirp4netns that fails stops the sandbox before the command runs.
	c.Outside = "/bin/false"
	argv = c.Args(Attempt{}, "/bin/sh", "-c", "echo ran")
	out, err = exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err == nil || strings.Contains(string(out), "ran") || !strings.Contains(string(out), "slirp4netns did not start") {
		t.Errorf("a failing slirp4netns: %v\n%s", err, out)
	}
}

type counted struct {
	addr string
	n    atomic.Int64
}

// acceptCount listens on host and counts the connections made.
func acceptCount(t *testing.T, host string) *counted {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c := &counted{addr: ln.Addr().String()}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.n.Add(1)
			conn.Close()
		}
	}()
	return c
}

// hostIPv4 is a non-loopback IPv4 address of this host ("": none).
func hostIPv4() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() && !ip.IP.IsLinkLocalUnicast() {
			return ip.IP.String()
		}
	}
	return ""
}

// BenchmarkNet is the start-up of an empty sandboxed process by
// SANDBOX_NET: the host's network, none, and outside (slirp4netns in
// front: BENCHMARKS.md).
func BenchmarkNet(b *testing.B) {
	needBwrap(b)
	slirp, _ := exec.LookPath("slirp4netns")
	for _, c := range []struct {
		name string
		cfg  Config
	}{{"host", Config{Net: true}}, {"none", Config{}}, {"outside", Config{Outside: slirp}}} {
		if c.name == "outside" && slirp == "" {
			continue
		}
		b.Run(c.name, func(b *testing.B) {
			var a Attempt
			if c.cfg.usesNet() {
				// A jail's start: its fifos made by the driver (the
				// probe's launcher makes its own).
				d, err := makeNetFifos(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				a.netFifos = d
			}
			argv := c.cfg.Args(a, "true")
			cpu0 := childCPU()
			for b.Loop() {
				if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
			}
			// The CPU of the processes a start takes (bwrap, the launcher,
			// its helpers, slirp4netns): on a loaded machine each waits
			// for a core, so their number is the cost (issue 25 §2).
			b.ReportMetric(float64(childCPU()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

// childCPU is the user and system time of this process's waited-for
// children so far.
func childCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
