#!/bin/sh
# i17-gate.sh: the gate of the merge-train test. Red when the tree holds
# both work/p0.txt and t3's "poison" (so t3's own gate is green, and every
# merge that adds t3 after p0 landed is red). A merge gate (run in
# .claudopilot/gate) appends the commit's subject to $GATES; the first one
# touches $WORK/first and sleeps until the journal holds "done" for all
# five phases, so they all wait to land when it returns.
set -eu
here=$(pwd -P)
case "$here" in
*/.claudopilot/gate*)
	git log -1 --format=%s HEAD >>"$GATES"
	if [ ! -e "$WORK/first" ]; then
		: >"$WORK/first"
		i=0
		while [ "$(grep -c '"ev":"done"' "$here/../state/journal.jsonl" || true)" -lt 5 ]; do
			i=$((i + 1))
			[ $i -lt 1200 ] || { echo "i17-gate.sh: the phases never got done" >&2; exit 1; }
			sleep 0.05
		done
	fi
	;;
esac
if [ -f work/p0.txt ] && [ -f poison ]; then
	echo "i17-gate.sh: red: poison next to p0's work" >&2
	exit 1
fi
