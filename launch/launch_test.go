package launch

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The probe a hostile child runs on its parent: can it read the parent's
// environ, cmdline and memory, and do they hold the token?
const probe = `p=$PPID
if env=$(tr '\0' '\n' 2>/dev/null <"/proc/$p/environ"); then
	if printf '%s\n' "$env" | grep -q '^GITHUB_TOKEN='; then e=TOKEN; else e=clean; fi
else e=denied; fi
if tr '\0' '\n' 2>/dev/null <"/proc/$p/cmdline" | grep -q 'tok-'; then c=TOKEN; else c=clean; fi
m=denied
addr=$(sed -n 's/^\([0-9a-f]*\)-[0-9a-f]* r.*/\1/p' "/proc/$p/maps" 2>/dev/null | head -n 1)
if [ -n "$addr" ] && dd if="/proc/$p/mem" bs=1 count=1 skip=$((0x$addr)) iflag=skip_bytes of=/dev/null 2>/dev/null; then m=read; fi
echo "environ=$e cmdline=$c mem=$m"`

const secretValue = "tok-launch-4b1d9e7c"

// TestMain runs the helper process when asked: Hide (unless
// LAUNCH_NOHIDE), then the probe as a child (through PROBE_WRAP, e.g.
// setpriv to another uid), printing what Hide handed back and what the
// probe saw.
func TestMain(m *testing.M) {
	if os.Getenv("LAUNCH_HELPER") != "1" {
		os.Exit(m.Run())
	}
	env := os.Environ()
	if os.Getenv("LAUNCH_NOHIDE") == "" {
		var err error
		if env, err = Hide(env); err != nil {
			fmt.Println("hide:", err)
			os.Exit(2)
		}
	}
	got := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GITHUB_TOKEN="); ok {
			got = v
		}
	}
	args := append(strings.Fields(os.Getenv("PROBE_WRAP")), "sh", "-c", probe)
	cmd := exec.Command(args[0], args[1:]...)
	out, err := cmd.CombinedOutput()
	fmt.Printf("handed=%v %s", got == secretValue, out)
	if err != nil {
		fmt.Println("probe:", err)
	}
	os.Exit(0)
}

// TestHide: the token is handed to the re-executed process over a pipe
// and is in neither its environ nor its cmdline, even for root with every
// capability; the process is non-dumpable, so a child of the same uid
// (without CAP_SYS_PTRACE) or of another uid reads neither its environ
// nor its memory. Without Hide the same child reads both (the probe sees
// what it should).
func TestHide(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it runs the probes as another uid and without capabilities (setpriv)")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) is not installed")
	}
	t.Parallel()
	nocaps := "setpriv --bounding-set=-all --inh-caps=-all"
	other := "setpriv --reuid=65534 --regid=65534 --clear-groups --bounding-set=-all --inh-caps=-all"
	for _, tc := range []struct {
		name         string
		helper, wrap string // how the helper and the probe run
		nohide       bool
		want         string
	}{
		{"without Hide the same uid reads it all", nocaps, "", true, "handed=true environ=TOKEN cmdline=clean mem=read"},
		{"root with every capability", "", "", false, "handed=true environ=clean cmdline=clean mem=read"},
		{"same uid", nocaps, "", false, "handed=true environ=denied cmdline=clean mem=denied"},
		{"another uid", "", other, false, "handed=true environ=denied cmdline=clean mem=denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			args := append(strings.Fields(tc.helper), exe, "-test.run=^$")
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Dir = "/"
			cmd.Env = append(os.Environ(), "LAUNCH_HELPER=1", "GITHUB_TOKEN="+secretValue, "PROBE_WRAP="+tc.wrap)
			if tc.nohide {
				cmd.Env = append(cmd.Env, "LAUNCH_NOHIDE=1")
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("helper: %v\n%s", err, out)
			}
			if got := strings.TrimSpace(string(out)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestSplitAndDecode(t *testing.T) {
	keep, sec := split([]string{"A=1", "GITHUB_TOKEN=x=y", "GH_TOKEN=z", "GITHUB_TOKENS=no"})
	if strings.Join(keep, " ") != "A=1 GITHUB_TOKENS=no" || strings.Join(sec, " ") != "GITHUB_TOKEN=x=y GH_TOKEN=z" {
		t.Errorf("split: %v %v", keep, sec)
	}
	if got := decode(encode(sec)); strings.Join(got, " ") != "GITHUB_TOKEN=x=y GH_TOKEN=z" {
		t.Errorf("decode(encode) = %v", got)
	}
}
