#!/bin/sh
# i13-hostile.sh: issue 13's hostile worker, meant to run under SANDBOX=bwrap.
# phase-01 waits until phase-02's worker is up (rendezvous in ~/rv,
# which the test makes writable with SANDBOX_RW), then tries to escape its worktree:
# writes to the base checkout and to phase-02's worktree, a read of
# phase-02's worktree, git update-ref of the base and of auto/phase-02,
# `git push . HEAD:<base>` (refused outside the sandbox too, the base being
# checked out) and `git push . HEAD:release` (a branch checked out nowhere),
# git branch -f of the base, and a setsid daemon.
# Each outcome (ok/denied) goes to work/result-<phase>.txt, committed with
# the phase's own work. Any other phase (phase-02) writes a secret file,
# says where its worktree is, waits for phase-01 to finish its tries, and
# does its work.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
check_contract
rv=$HOME/rv/i13
mkdir -p "$rv" work
wait_for() { n=0; until [ -e "$1" ]; do n=$((n+1)); [ $n -lt 3000 ] || die "no $1"; sleep 0.1; done; }

if [ "$phase" != phase-01 ]; then
	echo "phase-02's own" > secret
	pwd -P > "$rv/other.tmp" && mv "$rv/other.tmp" "$rv/other"
	wait_for "$rv/go"
	echo "$phase" > "work/$phase.txt"
	rm -f secret
	git add -A && git mv "$doc" "$(dirname "$doc")/DONE_$(basename "$doc")" && git commit -qm "$phase: done"
	exit 0
fi

echo "$phase" > "work/$phase.txt"
git add -A && git commit -qm "$phase: work"
wait_for "$rv/other"
other=$(cat "$rv/other")
top=$(dirname "$(git rev-parse --path-format=absolute --git-common-dir)")
base=$CLAUDOPILOT_BASE
out="work/result-$phase.txt"
try() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name ok"; else echo "$name denied"; fi >>"$out"; }
try write-base sh -c "echo stray > '$top/stray-base.txt'"
try write-other sh -c "echo stray > '$other/stray-other.txt'"
try read-other cat "$other/secret"
try update-ref-base git update-ref "refs/heads/$base" HEAD
try push-base git push -q . "HEAD:refs/heads/$base"
try branch-f-base git branch -f "$base" HEAD
try push-release git push -q . HEAD:refs/heads/release
git update-ref refs/heads/auto/phase-02 HEAD || true
setsid sh -c 'exec sleep 31417' </dev/null >/dev/null 2>&1 &
touch "$rv/go"
git add -A && git mv "$doc" "$(dirname "$doc")/DONE_$(basename "$doc")" && git commit -qm "$phase: done"
