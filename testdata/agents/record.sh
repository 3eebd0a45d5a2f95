#!/bin/sh
# record.sh: ok.sh that first saves what it was given to $RECORD/<phase>.env
# (its CLAUDOPILOT_* variables, sorted, and its folder relative to the
# repository: worktree=...) and $RECORD/<phase>.prompt (stdin).
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
: "${RECORD:?RECORD is not set}"
mkdir -p "$RECORD"
env | grep '^CLAUDOPILOT_' | sort >"$RECORD/$phase.env"
echo "worktree=$(pwd -P)" >>"$RECORD/$phase.env"
cat >"$RECORD/$phase.prompt"
check_contract "$(cat "$RECORD/$phase.prompt")"
do_work
finish
