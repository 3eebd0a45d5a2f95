#!/bin/sh
# i17-train.sh: for the merge-train test. p0 finishes at once; the others
# wait until the first merge gate has begun ($WORK/first), so they queue up
# behind p0's merge and are handed over as one train. t3 also adds a file
# "poison" that i17-gate.sh finds red next to p0's work; its supervisor
# removes it.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
if [ "${CLAUDOPILOT_ROLE:-}" = supervisor ]; then
	# The doc is DONE_ already: the worker's contract check does not apply.
	cat >/dev/null
	git rm -q poison
	git commit -q -m "$phase: no poison"
	exit 0
fi
check_contract
if [ "$phase" != p0 ]; then
	i=0
	while [ ! -e "$WORK/first" ]; do
		i=$((i + 1))
		[ $i -lt 1200 ] || die "the first merge gate never began"
		sleep 0.05
	done
fi
do_work
if [ "$phase" = t3 ]; then
	echo x >poison
	git add poison
	git commit -q -m "$phase: poison"
fi
finish
