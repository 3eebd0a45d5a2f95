#!/bin/sh
# ok.sh: a well-behaved agent. Checks the contract, writes work/<phase>.txt,
# commits, renames the doc to DONE_ and commits. Writes start/end to $TRACE.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
trace start
check_contract
do_work
finish
trace end
