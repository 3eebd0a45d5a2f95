package wire

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/worktree"
)

// fakeTool puts a program called name that fails as it does where it
// cannot work (bwrap without user namespaces, slirp4netns without
// /dev/net/tun) in front of PATH, for the rest of the test.
func fakeTool(t *testing.T, name, msg string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\necho '"+msg+"' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// sandboxOf resolves env as a run would and derives its sandbox and the
// lines it prints at its start (run.go prints each of SandboxNotes once).
func sandboxOf(t *testing.T, env map[string]string) (notes []string, sandboxed, outside, hostNet bool, err error) {
	t.Helper()
	s, rerr := settings.Resolve(settings.Input{Scope: settings.Run, Env: env})
	if rerr != nil {
		t.Fatal(rerr)
	}
	ctx := context.Background()
	c, err := Sandbox(ctx, s, &worktree.Client{Dir: t.TempDir()}, Env{"HOME": t.TempDir(), "PATH": os.Getenv("PATH")})
	if err != nil {
		return nil, false, false, false, err
	}
	if c != nil {
		sandboxed, outside, hostNet = true, c.Outside != "", c.Net
	}
	return SandboxNotes(ctx, s, c), sandboxed, outside, hostNet, nil
}

func count(lines []string, sub string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

// The defaults of SANDBOX (auto) and SANDBOX_NET (outside) (issue 21):
// each changed default is announced in one line until the knob is set;
// SANDBOX=auto where bubblewrap cannot work runs unconfined with one
// warning naming why, SANDBOX=bwrap there is an error before anything
// changes; SANDBOX_NET's default without a working slirp4netns falls back
// to the host's network with one warning, SANDBOX_NET=outside set is an
// error. Real bwrap where it works; a failing fake where the point is that
// it fails. (The scripts sandbox_auto, sandbox_net and sandbox_unavailable
// run the same through the driver under CLAUDOPILOT_SOAK=1.)
func TestSandboxDefaultsAnnounced(t *testing.T) {
	const noteAuto, noteNet = "SANDBOX now defaults to auto (it was off)", "SANDBOX_NET now defaults to outside (it was 1)"
	_, bwrapErr := exec.LookPath("bwrap")
	_, slirpErr := exec.LookPath("slirp4netns")
	t.Run("bwrap works", func(t *testing.T) {
		if bwrapErr != nil {
			t.Skip("bubblewrap (bwrap) is not installed")
		}
		notes, sb, out, _, err := sandboxOf(t, map[string]string{})
		if err != nil || !sb {
			t.Fatalf("the default: sandboxed %v, %v; want the sandbox", sb, err)
		}
		if count(notes, noteAuto) != 1 || count(notes, "warning: SANDBOX=auto") != 0 {
			t.Errorf("the default's lines %q: want SANDBOX's note once, no warning", notes)
		}
		if slirpErr == nil && (!out || count(notes, noteNet) != 1 || count(notes, "warning") != 0) {
			t.Errorf("with slirp4netns: outside %v, lines %q; want the network outside, SANDBOX_NET's note once, no warning", out, notes)
		}
		notes, sb, _, _, err = sandboxOf(t, map[string]string{"SANDBOX": "auto", "SANDBOX_NET": "1"})
		if err != nil || !sb || len(notes) != 0 {
			t.Errorf("both set: sandboxed %v, %v, lines %q; want the sandbox and no line", sb, err, notes)
		}
	})
	t.Run("bwrap fails", func(t *testing.T) {
		fakeTool(t, "bwrap", "bwrap: No permissions to create new namespace")
		notes, sb, _, _, err := sandboxOf(t, map[string]string{})
		if err != nil || sb {
			t.Fatalf("the default: sandboxed %v, %v; want unconfined", sb, err)
		}
		if count(notes, noteAuto) != 1 || count(notes, "warning: SANDBOX=auto: bubblewrap does not work here (") != 1 ||
			count(notes, "No permissions") != 1 || count(notes, "agents run unconfined") != 1 || count(notes, noteNet) != 0 {
			t.Errorf("the default's lines %q: want SANDBOX's note once and one warning with the reason", notes)
		}
		notes, sb, _, _, err = sandboxOf(t, map[string]string{"SANDBOX": "auto"})
		if err != nil || sb || count(notes, "now defaults") != 0 || count(notes, "warning: SANDBOX=auto") != 1 {
			t.Errorf("SANDBOX=auto set: sandboxed %v, %v, lines %q; want unconfined, the warning, no note", sb, err, notes)
		}
		_, _, _, _, err = sandboxOf(t, map[string]string{"SANDBOX": "bwrap"})
		if err == nil || !strings.Contains(err.Error(), "SANDBOX=bwrap (from the environment) cannot work here") || !strings.Contains(err.Error(), "No permissions") {
			t.Errorf("SANDBOX=bwrap: %v; want it cannot work here, with the reason", err)
		}
		notes, sb, _, _, err = sandboxOf(t, map[string]string{"SANDBOX": "off"})
		if err != nil || sb || len(notes) != 0 {
			t.Errorf("SANDBOX=off: sandboxed %v, %v, lines %q; want none of it", sb, err, notes)
		}
	})
	t.Run("slirp4netns fails", func(t *testing.T) {
		if bwrapErr != nil {
			t.Skip("bubblewrap (bwrap) is not installed")
		}
		fakeTool(t, "slirp4netns", "slirp4netns: cannot open /dev/net/tun")
		notes, sb, out, host, err := sandboxOf(t, map[string]string{"SANDBOX": "bwrap"})
		if err != nil || !sb || out || !host {
			t.Fatalf("SANDBOX_NET's default: sandboxed %v, outside %v, host network %v, %v; want the sandbox on the host's network", sb, out, host, err)
		}
		if count(notes, noteNet) != 1 || count(notes, "warning: SANDBOX_NET=outside needs slirp4netns (") != 1 || count(notes, "share the host's network") != 1 {
			t.Errorf("lines %q: want SANDBOX_NET's note once and one warning", notes)
		}
		_, _, _, _, err = sandboxOf(t, map[string]string{"SANDBOX": "bwrap", "SANDBOX_NET": "outside"})
		if err == nil || !strings.Contains(err.Error(), "SANDBOX_NET=outside (from the environment) cannot work here") {
			t.Errorf("SANDBOX_NET=outside set: %v; want it cannot work here", err)
		}
	})
}
