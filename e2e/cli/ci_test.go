package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/e2e"
)

// fakeAptGet logs each call to $LOG and, for an install, puts a stand-in
// of each package's command in $BIN. As apt-get, an install that names a
// package in $FAIL installs nothing.
const fakeAptGet = `#!/bin/sh
echo "$*" >> "$LOG"
[ "$1" = install ] || exit 0
shift
pkgs=""
for a; do case $a in -*) ;; *) pkgs="$pkgs $a";; esac; done
for p in $pkgs; do case " $FAIL " in *" $p "*) exit 100;; esac; done
for p in $pkgs; do
  case $p in bubblewrap) b=bwrap;; *) b=$p;; esac
  printf '#!/bin/sh\necho "%s version 2.39.5"\n' "$b" > "$BIN/$b"
  chmod +x "$BIN/$b"
done
`

// TestCIInstall runs .ci/install with a PATH that lacks tools and a fake
// apt-get: one update and one install of everything missing (not one of
// each per tool, #23: CI's time on a fresh machine), a package that cannot
// be had does not keep the others out, and the messages and warnings stay.
// chromium-headless-shell comes beside chromium: the web package's browser
// tests prefer it (about half the CPU); e2e/queue's still drive chromium.
func TestCIInstall(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		// .ci/install is a bash script: a machine without bash cannot run CI.
		t.Skip("no bash")
	}
	var tools []string // what the script and the fake apt-get call
	for _, name := range []string{"sed", "chmod"} {
		p, err := exec.LookPath(name)
		if err != nil {
			// The fake apt-get and the script need them; coreutils everywhere CI runs.
			t.Skip("no " + name)
		}
		tools = append(tools, p)
	}
	script, err := filepath.Abs(filepath.Join(e2e.Root(t), ".ci", "install"))
	if err != nil {
		t.Fatal(err)
	}
	all := []string{"git", "bwrap", "slirp4netns", "chromium", "chromium-headless-shell", "tmux"}
	for _, c := range []struct {
		name          string
		have          []string // commands there before
		apt           bool
		fail          string // packages apt-get cannot install
		wantLog, want []string
		notWant       []string
		wantExit      int
	}{
		{name: "a fresh machine", apt: true,
			wantLog: []string{"update -qq", "install -y -qq git bubblewrap slirp4netns chromium chromium-headless-shell tmux"},
			want:    []string{"ci: installing git (need 2.38 or newer)", "ci: installing bubblewrap", "ci: installing slirp4netns", "ci: installing chromium", "ci: installing chromium-headless-shell", "ci: installing tmux"},
			notWant: []string{"warning"}},
		{name: "nothing missing", have: all, apt: true, notWant: []string{"installing", "warning"}},
		{name: "one package cannot be had", have: []string{"git", "bwrap", "slirp4netns"}, apt: true, fail: "chromium",
			wantLog: []string{"update -qq", "install -y -qq chromium chromium-headless-shell tmux", "install -y -qq chromium", "install -y -qq chromium-headless-shell", "install -y -qq tmux"},
			want:    []string{"ci: could not install chromium", "ci: warning: chromium is missing; the browser test will skip"},
			notWant: []string{"tmux is missing", "chromium-headless-shell is missing", "installing git"}},
		{name: "no apt-get", have: []string{"git"},
			want:    []string{"ci: warning: bubblewrap is missing", "ci: warning: slirp4netns is missing", "ci: warning: chromium is missing", "ci: warning: chromium-headless-shell is missing", "ci: warning: tmux is missing"},
			notWant: []string{"installing"}},
		{name: "no git and no apt-get", wantExit: 1,
			want: []string{"ci: installing git (need 2.38 or newer)", "ci: git 2.38 or newer is required"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			bin, log := filepath.Join(dir, "bin"), filepath.Join(dir, "log")
			if err := os.MkdirAll(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, p := range tools {
				if err := os.Symlink(p, filepath.Join(bin, filepath.Base(p))); err != nil {
					t.Fatal(err)
				}
			}
			for _, h := range c.have {
				e2e.WriteFile(t, filepath.Join(bin, h), "#!/bin/sh\necho \""+h+" version 2.39.5\"\n")
			}
			if c.apt {
				e2e.WriteFile(t, filepath.Join(bin, "apt-get"), fakeAptGet)
			}
			cmd := exec.Command(bash, script)
			cmd.Env = []string{"PATH=" + bin, "LOG=" + log, "BIN=" + bin, "FAIL=" + c.fail}
			out, err := cmd.CombinedOutput()
			if got := cmd.ProcessState.ExitCode(); got != c.wantExit {
				t.Fatalf("exit %d (%v), want %d:\n%s", got, err, c.wantExit, out)
			}
			calls, _ := os.ReadFile(log)
			if got, want := strings.TrimSpace(string(calls)), strings.Join(c.wantLog, "\n"); got != want {
				t.Errorf("apt-get calls:\n%s\nwant:\n%s", got, want)
			}
			for _, w := range c.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(string(out), w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
		})
	}
}
