#!/bin/sh
# nodone.sh: an agent that commits work and exits 0 but never renames its
# doc to DONE_, so the phase is not done.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
trace start
check_contract
do_work
trace end
