#!/bin/sh
# fail.sh: an agent that gives up: exit 1 without touching anything (and
# without reading its prompt).
. "$(dirname "$0")/lib.sh"
trace start
echo "$me: $phase: cannot do this" >&2
trace end
exit 1
