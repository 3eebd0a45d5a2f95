#!/bin/sh
# i21-probe.sh: issue 21's probe of the sandbox table (docs/sandbox.md,
# "What an agent can read, write and reach"): one read and one write try
# for each row, each outcome ("probe <id> read|write 1|0") on its output,
# which the driver keeps in the attempt's log (a file in the worktree was
# a leftover commit of four git processes a run). Network rows are judged
# by the test's listeners; branches and objects by the test on the host.
# Then it does its phase's work and finishes.
. "${0%/*}/lib.sh"
check_contract
r() { id=$1; shift; if "$@" >/dev/null 2>&1; then echo "probe $id read 1"; else echo "probe $id read 0"; fi; }
w() { id=$1; shift; if "$@" >/dev/null 2>&1; then echo "probe $id write 1"; else echo "probe $id write 0"; fi; }
# rd ID FILE, wr ID FILE [LINE], ap ID FILE LINE: read FILE, write LINE
# ("probe") to it or append LINE, by the shell's own redirections: a cat
# or an sh -c was one process a row, in each of the test's probe runs.
rd() { if { IFS= read -r _l || [ -n "$_l" ]; } 2>/dev/null <"$2"; then echo "probe $1 read 1"; else echo "probe $1 read 0"; fi; }
wr() { if { echo "${3:-probe}" >"$2"; } 2>/dev/null; then echo "probe $1 write 1"; else echo "probe $1 write 0"; fi; }
ap() { if { echo "$3" >>"$2"; } 2>/dev/null; then echo "probe $1 write 1"; else echo "probe $1 write 0"; fi; }
# probe_net: a TCP connection to each of ADDRS (the test's listeners count
# them). bash's /dev/tcp, one process for all: a git ls-remote over http
# was three (git, its remote-http and git-remote-http, libcurl's) an
# address, 8 runs' worth a quarter of the test's CPU. Without bash, git.
probe_net() {
	if command -v bash >/dev/null 2>&1; then
		bash -c 'for a; do true <>"/dev/tcp/${a%:*}/${a##*:}"; done' _ $ADDRS >/dev/null 2>&1 || true
		return
	fi
	for a in $ADDRS; do
		GIT_TERMINAL_PROMPT=0 git ls-remote "http://$a/probe.git" >/dev/null 2>&1 || true
	done
}
# NET_ONLY: the test reads only the network rows of this run (another
# run of the same mode probes the files): the reach, and no phase's end
# (its commit, absorb, done check and gate were seven processes a run).
if [ -n "${NET_ONLY:-}" ]; then
	probe_net
	exit 0
fi
admin=$(git rev-parse --absolute-git-dir)
rd worktree README.md
wr worktree probe-own.txt
rd admin "$admin/HEAD"
wr admin "$admin/probe-note"
r branch git log -1 HEAD
w branch git commit -q --allow-empty -m probe
r others git show "$CLAUDOPILOT_BASE:README.md"
git update-ref refs/heads/release HEAD >/dev/null 2>&1 || true
rd base "$TOP/README.md"
wr base "$TOP/probe-stray"
rd neighbour "$P2/secret"
wr neighbour "$P2/probe-stray"
rd repo "$COMMON/config"
ap repo "$COMMON/config" "# probe"
r objects git cat-file -p "$CLAUDOPILOT_BASE:README.md"
blob=$(git rev-parse "$CLAUDOPILOT_BASE:README.md")
evil=$(echo "the probe's text" | git hash-object -w --stdin)
bdir=$COMMON/objects/${blob%"${blob#??}"}
bo=$bdir/${blob#??} eo=$COMMON/objects/${evil%"${evil#??}"}/${evil#??}
mkdir -p "$bdir" 2>/dev/null || true
chmod u+w "$bo" 2>/dev/null || true
cp -f "$eo" "$bo" 2>/dev/null || true
rd home "$HOME/profile"
wr home "$HOME/probe"
rd settings "$HOME/.claude/settings.json"
wr settings "$HOME/.claude/settings.json" '{}'
rd state "$HOME/.claude/state.json"
wr state "$HOME/.claude/probe.md"
rd rw "$RW/file"
wr rw "$RW/probe"
rd tmp "$HOSTTMP/file"
wr tmp "$HOSTTMP/probe"
rd rest "$REST/file"
wr rest "$REST/probe"
rd webtoken "$TOP/.claudopilot/state/web-token"
ap webtoken "$TOP/.claudopilot/state/web-token" "probe"
r environ grep -q PATH "/proc/$DRIVER/environ"
echo "probe environ write 0"
r process test -d "/proc/$DRIVER"
w process kill -0 "$DRIVER"
probe_net
git clean -qfd probe-own.txt
do_work
finish
