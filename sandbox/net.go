package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// SANDBOX_NET=outside: the sandbox gets a network namespace of its own
// (bwrap --unshare-net) whose only way out is slirp4netns, a user-mode
// network stack in front of it, started with --disable-host-loopback.
// Outside addresses, the host's own non-loopback ones included, are
// reached through slirp's NAT (10.0.2.2 would be the host's loopback and
// is refused); the host's 127.0.0.1 services are not reachable, nor its
// abstract Unix sockets (they belong to a network namespace).
//
// bubblewrap has no network plumbing of its own, so the launcher below
// runs bwrap with --info-fd (which tells the sandbox's process id) and
// --block-fd (which holds the command until told to go), attaches
// slirp4netns to that process's namespace, and lets the command start
// once slirp says it is ready. Any failure stops the sandbox before the
// command runs: no network is never silently the host's.

// netLauncher is run as: sh -c netLauncher sandbox-net <slirp4netns>
// <fifo folder> <bwrap> <bwrap's options…> -- <command…>. The fifo folder
// is the jail's own (makeNetFifos: made by the driver, no process); when
// it is "" (the probe) the launcher makes one in the host's temporary
// folder and removes it. The command's standard input is handed on
// explicitly (a background job's would be /dev/null).
//
// bwrap's info is read to its end ("}") before the fifo is closed: closed
// after the child-pid line, bwrap's write of the namespace ids that follow
// met a closed fifo and bwrap died of SIGPIPE (exit 141), its sandbox
// still holding the command's output open.
//
// Every start of a sandboxed process runs it, so it runs no helper
// program of its own beyond bwrap and slirp4netns: the child's pid is
// cut from bwrap's info line and the user namespaces are compared (test
// -ef on the namespace links) by the shell itself. Each helper (mktemp,
// mkfifo, tr, readlink twice, rm) cost a process start, ~4 ms of CPU
// here and a wait for a core on a loaded machine (issue 25 §2).
const netLauncher = `set -u
slirp=$1 d=$2 bw=$3
shift 3
b= s=
if [ -z "$d" ]; then
	d=$(mktemp -d) || exit 125
	trap 'rm -rf "$d"' EXIT
	mkfifo "$d/info" "$d/block" "$d/ready" || exit 125
fi
pid=
trap 'kill -KILL $pid $b $s 2>/dev/null; exit 143' TERM INT HUP
exec 8<&0
"$bw" --info-fd 3 --block-fd 4 "$@" 3>"$d/info" 4<"$d/block" <&8 8<&- &
b=$!
exec 8<&- 5<"$d/info" 6>"$d/block"
while IFS= read -r l <&5; do
	case $l in
	*'"child-pid"'*)
		pid=${l##*:}
		pid=${pid#"${pid%%[0-9]*}"}
		pid=${pid%%[!0-9]*} ;;
	'}') break ;;
	esac
done
exec 5<&-
if [ -z "$pid" ]; then
	exec 6>&-
	wait $b
	exit $?
fi
u=
[ /proc/$pid/ns/user -ef /proc/self/ns/user ] || u=--userns-path=/proc/$pid/ns/user
"$slirp" --configure --mtu=65520 --disable-host-loopback $u --ready-fd 7 "$pid" tap0 7>"$d/ready" >/dev/null 2>"$d/err" </dev/null &
s=$!
r=
read -r r <"$d/ready" || true
if [ "$r" != 1 ]; then
	IFS= read -r e <"$d/err" || true
	echo "sandbox: slirp4netns did not start (SANDBOX_NET=outside): ${e:-}" >&2
	# The sandbox's first process waits on the block fifo: killed before
	# the fifo closes, the command never starts.
	kill -KILL $pid $b $s 2>/dev/null
	{ wait $b; } 2>/dev/null
	exit 125
fi
echo 1 >&6
exec 6>&-
wait $b
rc=$?
kill $s 2>/dev/null
wait $s 2>/dev/null
exit $rc
`

// withNet puts the launcher in front of a bwrap command line when the
// sandbox's network is SANDBOX_NET=outside; fifos is the folder of its
// fifos (makeNetFifos), or "" for one of the launcher's own.
func (c *Config) withNet(fifos string, args []string) []string {
	if c.Net || c.Outside == "" {
		return args
	}
	return append([]string{"/bin/sh", "-c", netLauncher, "sandbox-net", c.Outside, fifos}, args...)
}

// usesNet is true when a sandboxed process starts through the launcher.
func (c *Config) usesNet() bool { return !c.Net && c.Outside != "" }

// makeNetFifos makes the launcher's fifos (info, block, ready) in a
// folder "net" of the jail's private scratch folder, anew: one left by a
// killed driver is replaced. The jail removes it when it is left.
func makeNetFifos(scratch string) (string, error) {
	d := filepath.Join(scratch, "net")
	if err := os.RemoveAll(d); err != nil {
		return "", fmt.Errorf("sandbox: the network's fifos: %w", err)
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("sandbox: the network's fifos: %w", err)
	}
	for _, f := range []string{"info", "block", "ready"} {
		if err := syscall.Mkfifo(filepath.Join(d, f), 0o600); err != nil {
			os.RemoveAll(d)
			return "", fmt.Errorf("sandbox: the network's fifos: %w", err)
		}
	}
	return d, nil
}

// Network modes of SANDBOX_NET.
const (
	// NetOutside: outside addresses through slirp4netns, not the host's
	// loopback; the default since issue 21.
	NetOutside = "outside"
	NetHost    = "host" // the host's network, loopback included (1)
	NetNone    = "none" // the sandbox's own loopback alone (0)
)

// NetChoices are the values SANDBOX_NET takes.
var NetChoices = []string{NetOutside, "1", "0", NetHost, NetNone, "on", "off", "yes", "no", "true", "false"}

// ParseNet reads a SANDBOX_NET value (one of NetChoices) as a mode.
func ParseNet(v string) string {
	switch v {
	case "1", NetHost, "on", "yes", "true":
		return NetHost
	case "0", NetNone, "off", "no", "false":
		return NetNone
	}
	return NetOutside
}
