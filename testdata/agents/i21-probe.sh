#!/bin/sh
# i21-probe.sh: issue 21's probe of the sandbox table (docs/sandbox.md,
# "What an agent can read, write and reach"): one read and one write try
# for each row, each outcome ("<id> read|write 1|0") in $OUT. Network rows
# are judged by the test's listeners; branches and objects by the test on
# the host. Then it does its phase's work and finishes.
. "$(dirname "$0")/lib.sh"
check_contract
: >"$OUT"
r() { id=$1; shift; if "$@" >/dev/null 2>&1; then echo "$id read 1"; else echo "$id read 0"; fi >>"$OUT"; }
w() { id=$1; shift; if "$@" >/dev/null 2>&1; then echo "$id write 1"; else echo "$id write 0"; fi >>"$OUT"; }
admin=$(git rev-parse --absolute-git-dir)
r worktree cat README.md
w worktree sh -c 'echo probe >probe-own.txt'
r admin cat "$admin/HEAD"
w admin sh -c "echo probe >'$admin/probe-note'"
r branch git log -1 HEAD
w branch git commit -q --allow-empty -m probe
r others git show "$CLAUDOPILOT_BASE:README.md"
git update-ref refs/heads/release HEAD >/dev/null 2>&1 || true
r base cat "$TOP/README.md"
w base sh -c "echo probe >'$TOP/probe-stray'"
r neighbour cat "$P2/secret"
w neighbour sh -c "echo probe >'$P2/probe-stray'"
r repo cat "$COMMON/config"
w repo sh -c "echo '# probe' >>'$COMMON/config'"
r objects git cat-file -p "$CLAUDOPILOT_BASE:README.md"
blob=$(git rev-parse "$CLAUDOPILOT_BASE:README.md")
evil=$(echo "the probe's text" | git hash-object -w --stdin)
obj() { echo "$COMMON/objects/$(echo "$1" | cut -c1-2)/$(echo "$1" | cut -c3-)"; }
mkdir -p "$(dirname "$(obj "$blob")")" 2>/dev/null || true
chmod u+w "$(obj "$blob")" 2>/dev/null || true
cp -f "$(obj "$evil")" "$(obj "$blob")" 2>/dev/null || true
r home cat "$HOME/profile"
w home sh -c "echo probe >'$HOME/probe'"
r settings cat "$HOME/.claude/settings.json"
w settings sh -c "echo '{}' >'$HOME/.claude/settings.json'"
r state cat "$HOME/.claude/state.json"
w state sh -c "echo probe >'$HOME/.claude/probe.md'"
r rw cat "$RW/file"
w rw sh -c "echo probe >'$RW/probe'"
r tmp cat "$HOSTTMP/file"
w tmp sh -c "echo probe >'$HOSTTMP/probe'"
r rest cat "$REST/file"
w rest sh -c "echo probe >'$REST/probe'"
r webtoken cat "$TOP/.claudopilot/state/web-token"
w webtoken sh -c "echo probe >>'$TOP/.claudopilot/state/web-token'"
r environ grep -q PATH "/proc/$DRIVER/environ"
echo "environ write 0" >>"$OUT"
r process test -d "/proc/$DRIVER"
w process kill -0 "$DRIVER"
for a in $ADDRS; do
	GIT_TERMINAL_PROMPT=0 git ls-remote "http://$a/probe.git" >/dev/null 2>&1 || true
done
git clean -qfd probe-own.txt
do_work
finish
