#!/bin/sh
# slow-ok.sh: ok.sh that holds on before working, so runs overlap:
#   WAITFOR=FILE  waits for FILE to exist (at most 10s);
#   BARRIER=N     waits until $TRACE holds N starts (barrier in lib.sh).
# Neither set: sleeps 0.2s.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
trace start
check_contract
i=0
if [ -n "${WAITFOR:-}" ]; then
	while [ ! -e "$WAITFOR" ] && [ $i -lt 200 ]; do
		i=$((i + 1))
		sleep 0.05
	done
elif [ -n "${BARRIER:-}" ]; then
	barrier "$BARRIER"
else
	sleep 0.2
fi
do_work
finish
trace end
