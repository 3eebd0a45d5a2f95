package work_test

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/claudopilot/claudopilot/sandbox"
	"github.com/claudopilot/claudopilot/state"
)

// tableRows maps the probe's ids (testdata/agents/i21-probe.sh) to the
// first column of the table in docs/sandbox.md.
var tableRows = map[string]string{
	"worktree":  "its worktree",
	"admin":     "its worktree's admin folder (`.git/worktrees/<id>`)",
	"branch":    "its branch",
	"others":    "the base branch and other branches",
	"base":      "the base checkout",
	"neighbour": "other phases' worktrees",
	"repo":      "the repository's config, `hooks/`, `info/`",
	"objects":   "existing objects in `.git/objects`",
	"home":      "HOME",
	"settings":  "the CLI's settings and memory (`~/.claude/settings.json`, `CLAUDE.md`, …)",
	"state":     "the rest of the CLI's state (`~/.claude/…`)",
	"rw":        "SANDBOX_RW paths",
	"tmp":       "the host's `/tmp`",
	"rest":      "the rest of the filesystem",
	"webtoken":  "the web page's token (`.claudopilot/state/web-token`, mode 0600)",
	"environ":   "the driver's environment (`/proc/<pid>/environ`)",
	"process":   "the driver's process (signals)",
	"loopo":     "the host's loopback (`127.0.0.1`), SANDBOX_NET=outside",
	"addro":     "the host's other addresses and outside, SANDBOX_NET=outside",
	"loop1":     "the host's loopback (`127.0.0.1`), SANDBOX_NET=1",
	"addr1":     "the host's other addresses and outside, SANDBOX_NET=1",
	"loop0":     "the host's loopback, SANDBOX_NET=0",
	"addr0":     "the host's other addresses and outside, SANDBOX_NET=0",
}

// docTable reads the table of docs/sandbox.md: row → column → the cell's
// leading words ("read and write", "read only", "nothing", "reach").
func docTable(t *testing.T) map[string]map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "docs", "sandbox.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "<!-- table:begin -->":
			in = true
			continue
		case line == "<!-- table:end -->":
			in = false
		}
		if !in || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| what ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 3 {
			t.Fatalf("docs/sandbox.md: a table row without three cells: %s", line)
		}
		lead := func(c string) string {
			c, _, _ = strings.Cut(strings.TrimSpace(c), " (")
			return c
		}
		out[strings.TrimSpace(cells[0])] = map[string]string{sandbox.Bwrap: lead(cells[1]), sandbox.Off: lead(cells[2])}
	}
	return out
}

// listener counts the connections made to it, closing each at once.
type listener struct {
	ln net.Listener
	n  atomic.Int64
}

func listen(t *testing.T, host string) *listener {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.n.Add(1)
			c.Close()
		}
	}()
	return l
}

// hostAddress is a non-loopback IPv4 address of this host ("": none).
func hostAddress() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() && !ip.IP.IsLinkLocalUnicast() {
			return ip.IP.String()
		}
	}
	return ""
}

// The table of docs/sandbox.md, "What an agent can read, write and reach",
// is what a probe agent (testdata/agents/i21-probe.sh) finds under bwrap
// (with SANDBOX_NET=1, and =0 and =outside for the network rows) and without a sandbox,
// row by row (issue 21). Without bubblewrap only the off column is checked.
func TestSandboxTable(t *testing.T) {
	t.Parallel()
	table := docTable(t)
	for id, row := range tableRows {
		if table[row] == nil {
			t.Errorf("docs/sandbox.md's table has no row %q (the probe's %s)", row, id)
		}
	}
	if len(table) != len(tableRows) {
		t.Errorf("docs/sandbox.md's table has %d rows, the probe knows %d: every row needs a probe", len(table), len(tableRows))
	}
	addr := hostAddress()
	if addr == "" {
		t.Log("no non-loopback address here: the rows of the host's other addresses are not probed")
	}
	slirp, _ := exec.LookPath("slirp4netns")
	if slirp == "" {
		t.Log("slirp4netns is not installed: the SANDBOX_NET=outside rows are not probed")
	}
	// Every probe run has a repository, listeners and folders of its
	// own: they run side by side (one after the other they were the
	// package's longest serial stretch, at the suite's tail).
	var mu sync.Mutex
	gots := map[string]map[string][2]bool{}
	t.Run("probe", func(t *testing.T) {
		for _, mode := range modes(t) {
			gots[mode] = map[string][2]bool{}
			var nets []string
			for _, net := range []string{"1", "0", "o"} {
				if mode == sandbox.Off && net != "1" {
					continue // SANDBOX_NET means nothing without the sandbox
				}
				if net == "o" && slirp == "" {
					continue
				}
				nets = append(nets, net)
			}
			for i, net := range nets {
				// The filesystem rows are probed once a mode, by its
				// last run: the runs before it probe the network only.
				full := i == len(nets)-1
				t.Run(mode+"-net-"+net, func(t *testing.T) {
					t.Parallel()
					res := probeRun(t, mode, net, addr, slirp, full)
					mu.Lock()
					defer mu.Unlock()
					for id, v := range res {
						gots[mode][id] = v
					}
				})
			}
		}
	})
	for _, mode := range modes(t) {
		got := gots[mode]
		if mode == sandbox.Off {
			got["loop0"], got["addr0"] = got["loop1"], got["addr1"]
			got["loopo"], got["addro"] = got["loop1"], got["addr1"]
		}
		for id, row := range tableRows {
			if strings.HasPrefix(id, "addr") && addr == "" {
				continue
			}
			if (id == "loopo" || id == "addro") && slirp == "" {
				continue
			}
			want := table[row][mode]
			var have string
			r, w := got[id][0], got[id][1]
			switch {
			case strings.HasPrefix(id, "loop") || strings.HasPrefix(id, "addr"):
				have = map[bool]string{true: "reach", false: "nothing"}[r]
			case r && w:
				have = "read and write"
			case r:
				have = "read only"
			case !w:
				have = "nothing"
			default:
				have = "write only"
			}
			if have != want {
				t.Errorf("%s: %q: the table says %q, the probe found %q", mode, row, want, have)
			}
		}
	}
}

// probeRun runs the probe as a phase's worker and returns, per row id,
// whether it could read and write (for the network rows: reach). net is
// SANDBOX_NET's row suffix: "1", "0", or "o" (outside, through slirp).
// Without full, only the network rows are probed (the probe's NET_ONLY):
// no neighbour, release branch or host-side checks, and the attempt ends
// without its done rename (no commit, absorb, done check or gate): some
// 35 processes fewer a run. The probe's findings come in its log.
func probeRun(t *testing.T, mode, net, addr, slirp string, full bool) map[string][2]bool {
	t.Helper()
	f := newFixture(t)
	// Outside /tmp, which the sandbox replaces: HOME, SANDBOX_RW and the
	// rest of the filesystem.
	outside, err := os.MkdirTemp("/var/tmp", "claudopilot-table-")
	if err != nil {
		t.Skipf("no /var/tmp to probe the filesystem outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	hostTmp, err := os.MkdirTemp("/tmp", "claudopilot-table-")
	if err != nil {
		t.Skipf("no /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(hostTmp) })
	home, rw, rest := filepath.Join(outside, "home"), filepath.Join(outside, "rw"), filepath.Join(outside, "rest")
	f.write(home, "profile", "the user's\n")
	f.write(home, ".claude/settings.json", "{}\n")
	f.write(home, ".claude/state.json", "{}\n")
	f.write(rw, "file", "rw\n")
	f.write(rest, "file", "rest\n")
	f.write(hostTmp, "file", "tmp\n")
	p2 := filepath.Join(f.top, ".claudopilot", "worktrees", "p2")
	var readme string
	if full {
		f.gitIn(f.top, "worktree", "add", "-q", "-b", "auto/p2", p2, "main")
		f.write(p2, "secret", "p2's\n")
		f.gitIn(f.top, "branch", "release")
		readme = f.gitIn(f.top, "cat-file", "blob", "main:README.md")
	}
	if err := os.MkdirAll(filepath.Join(f.top, ".claudopilot", "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.top, ".claudopilot", "state", "web-token"), []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.git.Protect(f.ctx); err != nil {
		t.Fatal(err)
	}
	loop := listen(t, "127.0.0.1")
	addrs := loop.ln.Addr().String()
	var other *listener
	if addr != "" {
		other = listen(t, addr)
		addrs += " " + other.ln.Addr().String()
	}
	if mode == sandbox.Bwrap {
		f.sandboxed()
		f.runner.Sandbox.Net = net == "1"
		if net == "o" {
			f.runner.Sandbox.Outside = slirp
		}
		f.runner.Sandbox.RW = []string{rw}
		f.runner.Sandbox.State = sandbox.HomeState(home)
	}
	f.runner.Agent = hostileAgent(t, "i21-probe.sh")
	if !full {
		f.runner.Env = append(f.runner.Env, "NET_ONLY=1")
	}
	f.runner.Env = append(f.runner.Env, "TOP="+f.top, "P2="+p2, "COMMON="+filepath.Join(f.top, ".git"),
		"HOME="+home, "RW="+rw, "REST="+rest, "HOSTTMP="+hostTmp, "DRIVER="+strconv.Itoa(os.Getpid()), "ADDRS="+addrs)
	o := f.run(job())
	// A network-only run ends without the phase's end (the probe's
	// NET_ONLY): exit 0, no DONE_ rename.
	if full && !o.OK || !full && o.Reason != state.ReasonNoDone {
		log, _ := os.ReadFile(o.LogPath)
		t.Fatalf("%s net=%s: outcome %+v\n%s", mode, net, o, log)
	}
	b, err := os.ReadFile(f.layout.LogPath("p1", "worker", 1))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		fs := strings.Fields(line)
		if len(fs) != 4 || fs[0] != "probe" {
			continue
		}
		v := got[fs[1]]
		v[map[string]int{"read": 0, "write": 1}[fs[2]]] = fs[3] == "1"
		got[fs[1]] = v
	}
	got["loop"+net] = [2]bool{loop.n.Load() > 0}
	if other != nil {
		got["addr"+net] = [2]bool{other.n.Load() > 0}
	}
	if !full {
		return got
	}
	// On the host: branches and objects.
	got["others"] = [2]bool{got["others"][0], f.rev("refs/heads/release") != f.rev("refs/heads/main")}
	got["objects"] = [2]bool{got["objects"][0], f.gitIn(f.top, "cat-file", "blob", "main:README.md") != readme}
	got["branch"] = [2]bool{got["branch"][0], strings.Contains(f.gitIn(f.top, "log", "--format=%s", "refs/heads/auto/p1"), "probe")}
	return got
}
