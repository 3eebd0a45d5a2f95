#!/bin/sh
# i4-doc.sh: an agent (worker or supervisor) that does what its phase doc
# says, so one AGENT_CMD/SUPERVISOR_CMD can fail some phases and pass others.
# The doc's fenced block tagged with the role,
#
#	```worker                ```supervisor
#	work                     record
#	finish                   fail "cannot help"
#	```                      ```
#
# is run with eval under `set -eu`, in the worktree. Without a block a worker
# does `work; finish` and a supervisor fails. The doc may already be renamed
# to DONE_ by an earlier attempt; it is read from wherever it is. State that
# must outlive the worktree goes under $WORK (set by testscript).
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
role=${CLAUDOPILOT_ROLE:-}
attempt=${CLAUDOPILOT_ATTEMPT:-}
echo "$me: $phase: $role $attempt: starting" # early output: STUCK_TIMEOUT counts silence
prompt=$(cat)
donedoc="$docdir/DONE_${doc##*/}"
src=$doc
if [ ! -f "$doc" ] && [ -f "$donedoc" ]; then
	src=$donedoc
fi
# check_contract wants the doc under its own name.
orig=$doc
doc=$src
check_contract "$prompt"
doc=$orig

# --- helpers the blocks use ---

# commit MSG: commit everything staged, if anything is.
commit() {
	git diff --cached --quiet || git commit -q -m "$1"
}

# work [TEXT]: work/<phase>.txt holds TEXT (default: the id), committed.
work() {
	put "work/$phase.txt" "${1:-$phase}"
}

# put FILE TEXT: FILE holds TEXT, committed (no commit when unchanged).
put() {
	case $1 in */*) mkdir -p "${1%/*}" ;; esac
	printf '%s\n' "$2" >"$1"
	git add -- "$1"
	commit "$phase: $role $attempt: $1"
}

# leave FILE TEXT: FILE holds TEXT, left uncommitted for the driver.
leave() {
	case $1 in */*) mkdir -p "${1%/*}" ;; esac
	printf '%s\n' "$2" >"$1"
}

# finish: the doc renamed to DONE_ and committed (once; lib.sh's is not
# idempotent).
finish() {
	if [ -f "$doc" ]; then
		git mv "$doc" "$donedoc"
		git commit -q -m "$phase: done"
	fi
}

# fail [MSG]: say MSG on stderr and exit 1.
fail() {
	echo "$me: $phase: $role $attempt: ${1:-gave up}" >&2
	exit 1
}

# record: $RECORD/<phase>.<role>-<attempt>.env gets the CLAUDOPILOT_*
# variables (sorted); .failure a copy of $CLAUDOPILOT_FAILURE_LOG when that
# names a file (.failure-missing when it is set but names none).
record() {
	: "${RECORD:?RECORD is not set}"
	mkdir -p "$RECORD"
	r="$RECORD/$phase.$role-$attempt"
	env | grep '^CLAUDOPILOT_' | sort >"$r.env"
	if [ -n "${CLAUDOPILOT_FAILURE_LOG:-}" ]; then
		if [ -f "$CLAUDOPILOT_FAILURE_LOG" ]; then
			cp "$CLAUDOPILOT_FAILURE_LOG" "$r.failure"
		else
			echo "$CLAUDOPILOT_FAILURE_LOG" >"$r.failure-missing"
		fi
	fi
}

# stamp KIND: append "KIND <phase> <role>-<attempt> <epoch-ns>" to $TRACE.
stamp() {
	: "${TRACE:?TRACE is not set}"
	echo "$1 $phase $role-$attempt $(date +%s%N)" >>"$TRACE"
}

# once NAME: true the first time it is asked for this phase, false after.
once() {
	mkdir -p "$WORK/.i4"
	[ ! -e "$WORK/.i4/$phase.$1" ] || return 1
	: >"$WORK/.i4/$phase.$1"
}

# main_checkout: the repository's main worktree.
main_checkout() {
	dirname "$(git rev-parse --path-format=absolute --git-common-dir)"
}

# live_manifest: the manifest in the main checkout, which the driver writes.
live_manifest() {
	echo "$(main_checkout)/$(dirname "$orig")/EXECUTION-MANIFEST.md"
}

# waitgrep FILE REGEX [SECONDS]: wait (default 30s) until FILE has a line
# matching REGEX (grep -E); exit 9 when it never does.
waitgrep() {
	i=0
	until grep -Eq -- "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le $((${3:-30} * 20)) ] || die "waited in vain for /$2/ in $1"
		sleep 0.05
	done
}

# hang: print one line, then sleep 60s without a word (for STUCK_TIMEOUT).
# "<shell pid> <sleep pid>" go to $WORK/<phase>.<role>-<attempt>.pids.
hang() {
	echo "$phase: thinking..."
	sleep 60 &
	echo "$$ $!" >"$WORK/$phase.$role-$attempt.pids"
	wait $!
}

# hold: once the driver has journaled this agent's process group (so a
# driver restarted after a kill can find it), write its pid to
# $WORK/<phase>.<role>-<attempt>.held and wait while $WORK/hold exists
# (at most 60s), silently.
hold() {
	pgid=$(ps -o pgid= -p $$ | tr -d ' ')
	waitgrep "$(main_checkout)/.claudopilot/state/journal.jsonl" "\"pgid\":$pgid[,}]" 10
	echo "$$" >"$WORK/$phase.$role-$attempt.held.tmp"
	mv "$WORK/$phase.$role-$attempt.held.tmp" "$WORK/$phase.$role-$attempt.held"
	i=0
	while [ -e "$WORK/hold" ] && [ $i -lt 1200 ]; do
		i=$((i + 1))
		sleep 0.05
	done
}

block_of "$role" "$src"
if [ -z "$block" ]; then
	case $role in
	worker) block='work; finish' ;;
	*) block='fail "no supervisor block in the doc: cannot help"' ;;
	esac
fi
eval "$block"
