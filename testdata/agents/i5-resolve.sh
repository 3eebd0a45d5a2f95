#!/bin/sh
# i5-resolve.sh: the repair supervisor for a merge conflict on shared.txt.
# It insists that it was called for a conflict (CLAUDOPILOT_FAILURE=conflict)
# with the base already merged into the branch and conflict markers in
# shared.txt; it saves what it found to $RECORD/<phase>.supervisor. Then,
# unless I5_RESOLVE=fail (it gives up: exit 1), it keeps both sides' lines,
# marks the file resolved and concludes the merge with `git commit --no-edit`.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
: "${RECORD:?RECORD is not set}"
mkdir -p "$RECORD"
out="$RECORD/$phase.supervisor"
# A supervisor's doc may already be DONE_: check_contract is for workers.
[ "${CLAUDOPILOT_ROLE:-}" = supervisor ] || die "CLAUDOPILOT_ROLE is '${CLAUDOPILOT_ROLE:-}'"
[ "$(git symbolic-ref --short HEAD)" = "auto/$phase" ] || die "HEAD is not auto/$phase"
[ -n "$(cat)" ] || die "no prompt on stdin"
{
	echo "failure=${CLAUDOPILOT_FAILURE:-}"
	echo "detail=${CLAUDOPILOT_FAILURE_DETAIL:-}"
	if git rev-parse -q --verify MERGE_HEAD >/dev/null; then echo "merging=yes"; else echo "merging=no"; fi
	echo "unmerged=$(git diff --name-only --diff-filter=U | tr '\n' ' ')"
	echo "markers=$(grep -c -e '^<<<<<<< ' -e '^=======$' -e '^>>>>>>> ' shared.txt || true)"
} >"$out"
[ "${CLAUDOPILOT_FAILURE:-}" = conflict ] || die "CLAUDOPILOT_FAILURE is '${CLAUDOPILOT_FAILURE:-}'"
grep -q '^<<<<<<< ' shared.txt || die "no conflict markers in shared.txt"
if [ "${I5_RESOLVE:-}" = fail ]; then
	echo "$me: $phase: cannot resolve this" >&2
	exit 1
fi
# Keep every non-marker line, both sides, in order.
grep -v -e '^<<<<<<< ' -e '^=======$' -e '^>>>>>>> ' shared.txt >shared.txt.new
mv shared.txt.new shared.txt
git add shared.txt
git commit -q --no-edit
echo resolved >>"$out"
