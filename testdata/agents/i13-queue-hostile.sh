#!/bin/sh
# i13-queue-hostile.sh: issue 13's hostile agent for queue mode, meant to
# run under SANDBOX=bwrap with two issues at once. Issue #1's agent waits
# until #2's is up (rendezvous in ~/rv, which the test makes
# writable), then looks for GITHUB_TOKEN in every visible process's
# environment (the driver's holds it; the agent's own never does), reads the base checkout's
# untracked base-secret.txt and #2's worktree, and records each outcome
# (found/hidden) in work/result.txt, committed with its work. #2's agent
# writes a secret file, says where its worktree is, waits, and does its
# work.
set -eu
rv=$HOME/rv/i13q
mkdir -p "$rv" work
wait_for() { n=0; until [ -e "$1" ]; do n=$((n+1)); [ $n -lt 3000 ] || { echo "no $1" >&2; exit 9; }; sleep 0.1; done; }
if [ "$CLAUDOPILOT_PHASE" != "#1" ]; then
	echo "#2's own" > secret
	pwd -P > "$rv/other.tmp" && mv "$rv/other.tmp" "$rv/other"
	wait_for "$rv/go"
	rm -f secret
	echo two > work/two.txt
	git add -A && git commit -qm "issue 2 work"
	exit 0
fi
wait_for "$rv/other"
read -r other <"$rv/other"
common=$(git rev-parse --path-format=absolute --git-common-dir)
top=${common%/*}
out=work/result.txt
token=hidden
# One grep a process (-z: the environ's entries end in NUL), not tr|grep.
for f in /proc/[0-9]*/environ; do
	if grep -qz '^GITHUB_TOKEN=' "$f" 2>/dev/null; then token=found; fi
done
echo "token $token" >>"$out"
if cat "$top/base-secret.txt" >/dev/null 2>&1; then echo "read-base found"; else echo "read-base hidden"; fi >>"$out"
if cat "$other/secret" >/dev/null 2>&1; then echo "read-other found"; else echo "read-other hidden"; fi >>"$out"
touch "$rv/go"
git add -A && git commit -qm "issue 1 work"
