#!/bin/sh
# i5-unscope.sh: the repair supervisor for a scope failure. It insists on
# CLAUDOPILOT_FAILURE=scope, saves the failure and its detail to
# $RECORD/<phase>.supervisor, then puts every path the detail lists
# ("changes outside (owns: …): a, b") back as it is at the branch's merge
# base with the base branch (removing it if it did not exist), and commits.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
: "${RECORD:?RECORD is not set}"
mkdir -p "$RECORD"
[ "${CLAUDOPILOT_ROLE:-}" = supervisor ] || die "CLAUDOPILOT_ROLE is '${CLAUDOPILOT_ROLE:-}'"
[ "$(git symbolic-ref --short HEAD)" = "auto/$phase" ] || die "HEAD is not auto/$phase"
[ -n "$(cat)" ] || die "no prompt on stdin"
detail=${CLAUDOPILOT_FAILURE_DETAIL:-}
printf 'failure=%s\ndetail=%s\n' "${CLAUDOPILOT_FAILURE:-}" "$detail" >"$RECORD/$phase.supervisor"
[ "${CLAUDOPILOT_FAILURE:-}" = scope ] || die "CLAUDOPILOT_FAILURE is '${CLAUDOPILOT_FAILURE:-}'"
paths=${detail#*): }
[ "$paths" != "$detail" ] || die "no paths in the detail: $detail"
mb=$(git merge-base HEAD "refs/heads/$CLAUDOPILOT_BASE")
for p in $(echo "$paths" | tr ',' ' '); do
	if git cat-file -e "$mb:$p" 2>/dev/null; then
		git checkout -q "$mb" -- "$p"
	else
		git rm -q -- "$p"
	fi
	echo "reverted $p" >>"$RECORD/$phase.supervisor"
done
git commit -q -m "$phase: revert changes outside the scope"
