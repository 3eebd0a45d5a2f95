#!/bin/sh
# i10-unlink-git.sh: a hostile worker. It writes work.txt, deletes its
# worktree's .git file (so git run in its folder would find the main
# repository), touches $WORK/<phase>.held and hangs until it is stopped.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
check_contract
echo "$phase" >work.txt
rm .git
touch "$WORK/$phase.held"
sleep 300 &
wait
