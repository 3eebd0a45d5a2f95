package sandbox

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestArgs(t *testing.T) {
	refs := &Refs{Dir: "/r/.claudopilot/sandbox/p1", Branch: "auto/p1", Start: strings.Repeat("a", 40)}
	base := []string{"bwrap", "--die-with-parent", "--unshare-pid", "--as-pid-1", "--new-session", "--cap-drop", "ALL"}
	sys := []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"}
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name string
		c    Config
		a    Attempt
		argv []string
		want []string
	}{
		{
			name: "empty attempt: read-only system, private /tmp",
			argv: []string{"true"},
			want: cat(base, []string{"--unshare-net"}, sys, []string{"--", "true"}),
		},
		{
			name: "network shared, custom binary",
			c:    Config{Bwrap: "/opt/bwrap", Net: true},
			want: cat([]string{"/opt/bwrap"}, base[1:], sys, []string{"--"}),
		},
		{
			name: "agent: hide, re-expose git read-only, private objects, admin, refs, worktree",
			c:    Config{Net: true, Hide: []string{"/r", "/w"}, RW: []string{"/h/.claude"}},
			a: Attempt{
				Worktree: "/r/.claudopilot/worktrees/p1", Common: "/r/.git", Admin: "/r/.git/worktrees/p1",
				Objects: &Objects{Dir: "/r/.claudopilot/sandbox/p1/objects", Shared: "/r/.claudopilot/sandbox/p1/shared"},
				Refs:    refs, Show: []string{"/r/.claudopilot/logs/p1"},
			},
			argv: []string{"/bin/sh", "-c", "claude"},
			want: cat(base, sys,
				[]string{"--tmpfs", "/r", "--tmpfs", "/w"},
				[]string{"--ro-bind", "/r/.git", "/r/.git"},
				[]string{"--ro-bind", "/r/.git/objects", "/r/.claudopilot/sandbox/p1/shared", "--bind", "/r/.claudopilot/sandbox/p1/objects", "/r/.git/objects"},
				[]string{"--bind", "/r/.git/worktrees/p1", "/r/.git/worktrees/p1"},
				[]string{"--bind", "/r/.claudopilot/sandbox/p1/refs", "/r/.git/refs/heads/auto"},
				[]string{"--bind", "/r/.claudopilot/sandbox/p1/logs", "/r/.git/logs/refs/heads/auto"},
				[]string{"--ro-bind-try", "/r/.claudopilot/logs/p1", "/r/.claudopilot/logs/p1"},
				[]string{"--bind-try", "/h/.claude", "/h/.claude"},
				[]string{"--bind", "/r/.claudopilot/worktrees/p1", "/r/.claudopilot/worktrees/p1"},
				[]string{"--remount-ro", "/r", "--remount-ro", "/w"},
				[]string{"--", "/bin/sh", "-c", "claude"}),
		},
		{
			name: "no refs, no private objects (objects/ read-only), no network",
			c:    Config{Hide: []string{"/r"}},
			a:    Attempt{Worktree: "/r/wt", Common: "/r/.git", Admin: "/r/.git/worktrees/wt"},
			want: cat(base, []string{"--unshare-net"}, sys, []string{"--tmpfs", "/r"},
				[]string{"--ro-bind", "/r/.git", "/r/.git"},
				[]string{"--bind", "/r/.git/worktrees/wt", "/r/.git/worktrees/wt"},
				[]string{"--bind", "/r/wt", "/r/wt", "--remount-ro", "/r", "--"}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.c.Args(tt.a, tt.argv...)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Args:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]string{"auto": Auto, "AUTO": Auto, "bwrap": Bwrap, "BWRAP": Bwrap, "bubblewrap": Bwrap, "": Off, "off": Off, "0": Off, "none": Off} {
		got, err := ParseMode(in)
		if err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"docker", "1", "on"} {
		if _, err := ParseMode(in); err == nil {
			t.Errorf("ParseMode(%q): no error", in)
		}
	}
}

func TestHomeRW(t *testing.T) {
	got, err := HomeRW("/home/u", "~/.cache/go-build:/var/cache/x::")
	if err != nil {
		t.Fatal(err)
	}
	// The CLIs' state is not among them: it is copied per process.
	want := []string{"/home/u/.cache/go-build", "/var/cache/x"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("HomeRW:\n got %q\nwant %q", got, want)
	}
	state := HomeState("/nonexistent/u")
	if len(state) != len(StateDirs) || state[0] != "/nonexistent/u/.claude" {
		t.Errorf("HomeState = %q", state)
	}
	if _, err := HomeRW("/home/u", "relative/dir"); err == nil {
		t.Error("a relative SANDBOX_RW path: no error")
	}
}

func TestPrepareRefsRefusesBranchOutsideAFolder(t *testing.T) {
	for _, b := range []string{"main", "auto/", "/x", "auto/../main"} {
		if _, err := PrepareRefs(t.TempDir(), t.TempDir(), b, strings.Repeat("a", 40)); err == nil {
			t.Errorf("PrepareRefs(%q): no error", b)
		}
	}
}

// Tools under /tmp stay visible over the private /tmp: the PATH folders
// there and a command's own folder; nothing else under /tmp is shown.
func TestToolPaths(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "toolpaths")
	if err != nil {
		t.Skip("no /tmp")
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "bin")
	agent := filepath.Join(dir, "agents")
	os.MkdirAll(bin, 0o755)
	os.MkdirAll(agent, 0o755)
	got := ToolPaths("/usr/bin:"+bin+":/tmp", agent+"/run.sh --flag", "relative.sh", "/usr/local/bin/x")
	want := []string{Real(bin), Real(agent)}
	if !slices.Equal(got, want) {
		t.Errorf("ToolPaths = %v, want %v", got, want)
	}
	c := &Config{Keep: got}
	args := strings.Join(c.Args(Attempt{}, "true"), " ")
	if !strings.Contains(args, "--tmpfs /tmp --ro-bind-try "+Real(bin)) {
		t.Errorf("the kept folders are not shown right after the private /tmp: %s", args)
	}
}

// A tool under /dev/shm is kept too: --dev /dev mounts a fresh /dev
// without it (bench/overhead.sh on /dev/shm ran no agent: "not found").
func TestToolPathsDevShm(t *testing.T) {
	got := ToolPaths("/usr/bin:/dev/shm/x/bin:/dev", "/dev/shm/y/agent.sh", "/dev/null")
	want := []string{"/dev/shm/x/bin", "/dev/shm/y"}
	if !slices.Equal(got, want) {
		t.Errorf("ToolPaths = %v, want %v", got, want)
	}
}
