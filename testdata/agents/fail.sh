#!/bin/sh
# fail.sh: an agent that gives up: exit 1 without touching anything (and
# without reading its prompt).
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
trace start
echo "$me: $phase: cannot do this" >&2
trace end
exit 1
