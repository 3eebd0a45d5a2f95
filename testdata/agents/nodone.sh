#!/bin/sh
# nodone.sh: an agent that commits work and exits 0 but never renames its
# doc to DONE_, so the phase is not done.
. "$(dirname "$0")/lib.sh"
trace start
check_contract
do_work
trace end
