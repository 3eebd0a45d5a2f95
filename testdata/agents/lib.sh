# lib.sh: shared by the fake agents (sourced, not run). An agent runs in its
# phase's worktree with the contract's CLAUDOPILOT_* variables and the
# prompt on stdin.
set -eu

phase=${CLAUDOPILOT_PHASE:?CLAUDOPILOT_PHASE is not set}
doc=${CLAUDOPILOT_PHASE_DOC:?CLAUDOPILOT_PHASE_DOC is not set}
# The shell's own expansions, not basename and dirname: one process fewer
# for every fake agent, two more for its finish (issue 23's suite time).
me=${0##*/}
case $doc in
*/*) docdir=${doc%/*} ;;
*) docdir=. ;;
esac

# die MSG: a broken contract. Exit 9 so it cannot pass for a planned failure.
die() {
	echo "$me: $phase: $*" >&2
	exit 9
}

# trace KIND: append "KIND <phase> <epoch-ns>" to $TRACE when it is set.
trace() {
	if [ -n "${TRACE:-}" ]; then
		echo "$1 $phase $(date +%s%N)" >>"$TRACE"
	fi
}

# check_contract [PROMPT]: what the driver promises every agent. The prompt
# is read from stdin unless the caller already did and passes it.
check_contract() {
	case "${CLAUDOPILOT_ROLE:-}" in
	worker | supervisor) ;;
	*) die "CLAUDOPILOT_ROLE is '${CLAUDOPILOT_ROLE:-}'" ;;
	esac
	[ "${CLAUDOPILOT_BRANCH:-}" = "auto/$phase" ] || die "CLAUDOPILOT_BRANCH is '${CLAUDOPILOT_BRANCH:-}'"
	[ -n "${CLAUDOPILOT_BASE:-}" ] || die "CLAUDOPILOT_BASE is empty"
	[ -n "${CLAUDOPILOT_ATTEMPT:-}" ] || die "CLAUDOPILOT_ATTEMPT is empty"
	[ -n "${CLAUDOPILOT_GATE:-}" ] || die "CLAUDOPILOT_GATE is empty"
	# The top of its worktree and its branch, read as git reads them
	# (read_head): no git process (#23: symbolic-ref and rev-parse
	# --show-toplevel were two of ~8 ms each per agent start).
	here=$(pwd -P)
	read_head
	case $head in
	"ref: refs/heads/"*) head=${head#ref: refs/heads/} ;;
	*) die "HEAD is detached" ;;
	esac
	[ "$head" = "$CLAUDOPILOT_BRANCH" ] || die "HEAD is $head, not $CLAUDOPILOT_BRANCH"
	case "$here" in
	*/.claudopilot/worktrees/*) ;;
	*) die "started in $here, not in a phase worktree" ;;
	esac
	case "$doc" in
	/*) die "CLAUDOPILOT_PHASE_DOC is absolute: $doc" ;;
	esac
	[ -f "$doc" ] || die "the phase doc $doc is not in the worktree"
	[ -s "${CLAUDOPILOT_PROMPT_FILE:-/nonexistent}" ] || die "no prompt file at '${CLAUDOPILOT_PROMPT_FILE:-}'"
	if [ $# -gt 0 ]; then prompt=$1; else prompt=$(cat); fi
	[ -n "$prompt" ] || die "no prompt on stdin"
}

# read_head: $head is what HEAD holds in the worktree whose top is the
# current folder ("ref: refs/heads/NAME", or a commit id when detached),
# read as git reads it: the top holds .git, a file naming the worktree's
# git folder, which holds HEAD. Dies when the current folder is not the
# top of a worktree.
read_head() {
	[ -f .git ] || die "not started at the top of its worktree ($(pwd -P))"
	IFS= read -r gitdir <.git || die "cannot read .git"
	gitdir=${gitdir#gitdir: }
	case $gitdir in /*) ;; *) gitdir=$(pwd -P)/$gitdir ;; esac
	IFS= read -r head <"$gitdir/HEAD" || die "cannot read $gitdir/HEAD"
}

# block_of TAG FILE: $block is the body of FILE's first fenced block
# opened by a line ```TAG (up to the next line starting with ```), as the
# awk the agents ran did, in the shell: no process per agent start (#23).
block_of() {
	block="" on="" has="" f='```'
	while IFS= read -r l || [ -n "$l" ]; do
		if [ "$l" = "$f$1" ]; then
			on=1
			continue
		fi
		[ -n "$on" ] || continue
		case $l in "$f"*) break ;; esac
		[ -z "$l" ] || has=1
		block="$block$l
"
	done <"$2"
	[ -n "$has" ] || block="" # only empty lines: none, as $(awk) gave
}

# do_work: the phase's work, work/<phase>.txt holding its id, committed with
# anything else left in work/.
do_work() {
	mkdir -p work
	echo "$phase" >"work/$phase.txt"
	git add -A work
	git commit -q -m "$phase: work"
}

# finish: rename the phase doc to DONE_<doc> and commit, as "done" requires.
finish() {
	git mv "$doc" "$docdir/DONE_${doc##*/}"
	git commit -q -m "$phase: done"
}

# deps_of PHASE: its deps, read from the manifest in this worktree.
deps_of() {
	sed -n "s/.*\*\*$1\*\*.*(deps: *\([^)]*\)).*/\1/p" "$docdir/EXECUTION-MANIFEST.md" |
		tr ',' ' ' | tr -s ' ' '\n' | grep -v -e '^none$' -e '^$' || true
}

# barrier N: wait until $TRACE holds N starts, so N agents run at once. The
# bound (60s) only keeps a driver that never runs N at once from hanging the
# test; the concurrency check then fails. It is not a timing assumption.
barrier() {
	: "${TRACE:?barrier needs TRACE}"
	until_s=$(($(date +%s) + 60))
	while [ "$(grep -c '^start ' "$TRACE")" -lt "$1" ] && [ "$(date +%s)" -lt "$until_s" ]; do
		sleep 0.05
	done
}
