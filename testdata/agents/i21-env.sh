#!/bin/sh
# i21-env.sh: a worker that reads every variable it was given (what a
# hostile agent would send away) and commits their names in work/env.txt,
# then finishes (issue 21: run passed GITHUB_TOKEN and other secrets).
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
check_contract
mkdir -p work
env | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p' | sort -u >work/env.txt
do_work
finish
