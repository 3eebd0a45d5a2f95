#!/bin/sh
# i27-ask.sh: an agent that needs a decision (issue 27 §1). It saves the
# prompt it was given to $RECORD/<phase>.prompt, commits some work, and asks
# in the way ASK names:
#   marker  the CLAUDOPILOT-NEEDS-INPUT line inside a Claude stream-json event
#   plain   the marker on a line of its own, then an escape sequence
#   file    .claudopilot-question, committed with its work (it must not land)
#   link    .claudopilot-question as a link to $SECRET (hostile: never read)
#   none    no question: the phase is done (an answered attempt)
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
: "${RECORD:?RECORD is not set}"
mkdir -p "$RECORD"
cat >"$RECORD/$phase.prompt"
echo "work $*" >work.txt
git add work.txt
git commit -q -m "$phase: the part that needs no decision"
case "${ASK:-}" in
marker)
	printf '%s\n' '{"type":"assistant","message":{"content":[{"type":"text","text":"I read the doc.\nCLAUDOPILOT-NEEDS-INPUT: Postgres or SQLite for \"the store\"?\nI stop here."}]}}'
	;;
plain)
	printf 'thinking\nCLAUDOPILOT-NEEDS-INPUT: \033[31mwhich port?\033[0m\n'
	;;
file)
	printf 'Which licence:\nMIT or Apache-2.0?\n' >.claudopilot-question
	git add .claudopilot-question
	git commit -q -m "$phase: ask"
	;;
link)
	ln -s "${SECRET:?}" .claudopilot-question
	;;
none)
	git mv "$doc" "$(dirname "$doc")/DONE_$(basename "$doc")"
	git commit -q -m "$phase: done"
	;;
*) die "ASK is '${ASK:-}'" ;;
esac
