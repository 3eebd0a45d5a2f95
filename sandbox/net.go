package sandbox

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
// <bwrap> <bwrap's options…> -- <command…>. The fifos live in a private
// folder of the host's temporary folder; the command's standard input is
// handed on explicitly (a background job's would be /dev/null).
const netLauncher = `set -u
slirp=$1 bw=$2
shift 2
d=$(mktemp -d) || exit 125
b= s=
trap 'rm -rf "$d"' EXIT
pid=
trap 'kill -KILL $pid $b $s 2>/dev/null; exit 143' TERM INT HUP
mkfifo "$d/info" "$d/block" "$d/ready" || exit 125
exec 8<&0
"$bw" --info-fd 3 --block-fd 4 "$@" 3>"$d/info" 4<"$d/block" <&8 8<&- &
b=$!
exec 8<&- 5<"$d/info" 6>"$d/block"
while IFS= read -r l <&5; do
	case $l in *'"child-pid"'*) pid=$(printf '%s' "$l" | tr -cd 0-9); break ;; esac
done
exec 5<&-
if [ -z "$pid" ]; then
	exec 6>&-
	wait $b
	exit $?
fi
u=
[ "$(readlink /proc/$pid/ns/user)" = "$(readlink /proc/self/ns/user)" ] || u=--userns-path=/proc/$pid/ns/user
"$slirp" --configure --mtu=65520 --disable-host-loopback $u --ready-fd 7 "$pid" tap0 7>"$d/ready" >/dev/null 2>"$d/err" </dev/null &
s=$!
r=
read -r r <"$d/ready" || true
if [ "$r" != 1 ]; then
	echo "sandbox: slirp4netns did not start (SANDBOX_NET=outside): $(head -n 1 "$d/err")" >&2
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
// sandbox's network is SANDBOX_NET=outside.
func (c *Config) withNet(args []string) []string {
	if c.Net || c.Outside == "" {
		return args
	}
	return append([]string{"/bin/sh", "-c", netLauncher, "sandbox-net", c.Outside}, args...)
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
