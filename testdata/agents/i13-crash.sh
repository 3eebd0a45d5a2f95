#!/bin/sh
# i13-crash.sh: a sandboxed worker whose driver is killed while it runs
# (issue 13). The first attempt commits, says so in ~/rv/i13crash
# (writable in the sandbox: SANDBOX_RW), and waits to be killed with the driver: its
# commit is then only on its private branch ref. The next attempt requires
# that commit on its branch, then finishes.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
rv=$HOME/rv/i13crash
mkdir -p "$rv" work
if [ ! -f work/before-kill.txt ]; then
	echo one >work/before-kill.txt
	git add work && git commit -qm "before the kill"
	touch "$rv/committed"
	while :; do sleep 1; done
fi
git log --format=%s | grep -qx "before the kill" || die "the commit made before the kill is not on the branch"
finish
