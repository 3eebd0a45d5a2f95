#!/bin/sh
# i5-hold.sh: ok.sh that holds on in the middle, so a test can act while the
# run is paused: it touches $HOLD/<phase>.started, waits (at most 30s) for
# $HOLD/<phase>.go, then does ok.sh's work. A test that does not want to
# hold a phase creates its .go file up front.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
: "${HOLD:?HOLD is not set}"
trace start
check_contract
: >"$HOLD/$phase.started"
i=0
while [ ! -e "$HOLD/$phase.go" ]; do
	i=$((i + 1))
	[ $i -lt 600 ] || { echo "$me: $phase: $HOLD/$phase.go never appeared" >&2; exit 7; }
	sleep 0.05
done
do_work
finish
trace end
