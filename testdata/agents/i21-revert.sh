#!/bin/sh
# i21-revert.sh: the repair supervisor for a protected refusal. It insists
# on CLAUDOPILOT_FAILURE=protected, saves the failure, its detail and its
# prompt to $RECORD/<phase>.supervisor, then puts every path the detail
# names ("changes files that steer the next run: a (why); b (why)") back
# as it is at the branch's merge base with the base branch (removing it
# if it did not exist), and commits.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
: "${RECORD:?RECORD is not set}"
mkdir -p "$RECORD"
[ "${CLAUDOPILOT_ROLE:-}" = supervisor ] || die "CLAUDOPILOT_ROLE is '${CLAUDOPILOT_ROLE:-}'"
detail=${CLAUDOPILOT_FAILURE_DETAIL:-}
printf 'failure=%s\ndetail=%s\n' "${CLAUDOPILOT_FAILURE:-}" "$detail" >"$RECORD/$phase.supervisor"
cat >>"$RECORD/$phase.supervisor"
[ "${CLAUDOPILOT_FAILURE:-}" = protected ] || die "CLAUDOPILOT_FAILURE is '${CLAUDOPILOT_FAILURE:-}'"
list=${detail#*run: }
[ "$list" != "$detail" ] || die "no paths in the detail: $detail"
mb=$(git merge-base HEAD "refs/heads/$CLAUDOPILOT_BASE")
echo "$list" | sed 's/; /\n/g' | sed 's/ (.*//' | while read -r p; do
	if git cat-file -e "$mb:$p" 2>/dev/null; then
		git checkout -q "$mb" -- "$p"
	else
		git rm -q -- "$p"
	fi
	echo "reverted $p" >>"$RECORD/$phase.supervisor"
done
git commit -q -m "$phase: put back what steers the next run"
