#!/bin/sh
# i5-gate.sh: a gate (GATE_CMD) that records what it gated and can hold the
# first gate of a merge commit. Appends "<phase> <subject> | on <first
# parent's subject>" to $GATES (the phase is the worktree's folder name,
# "gate" for a merge gate).
# The first time it gates a "Merge " commit it touches $WORK/gating and
# waits (at most 30s) for $WORK/user2.done, so the test can move the base
# while the merge owner holds a merge commit built on the old tip.
set -eu
: "${GATES:?GATES is not set}"
phase=$(basename "$(pwd -P)")
subject=$(git log -1 --format=%s HEAD)
parent=$(git log -1 --format=%s HEAD^1)
echo "$phase $subject | on $parent" >>"$GATES"
case "$subject" in
"Merge "*)
	if [ ! -e "$WORK/gating" ]; then
		: >"$WORK/gating"
		i=0
		while [ ! -e "$WORK/user2.done" ]; do
			i=$((i + 1))
			[ $i -lt 600 ] || { echo "i5-gate.sh: $WORK/user2.done never appeared" >&2; exit 1; }
			sleep 0.05
		done
	fi
	;;
esac
