#!/bin/sh
# i17-stack.sh: for the stacking test (STACK=1). a does its work. b notes
# that it started ($WORK/b-started, which a's merge gate waits for), and
# checks that its worktree holds a's work: it was started on a's tip.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
check_contract
if [ "$phase" = b ]; then
	[ -f work/a.txt ] || die "started without a's work: not stacked on a's tip"
	: >"$WORK/b-started"
fi
do_work
finish
