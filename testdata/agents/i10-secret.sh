#!/bin/sh
# i10-secret.sh: worker or supervisor around a secret. The worker does its
# work and sweeps everything into its commit with `git add -A`, the .env
# that WORKTREE_PREPARE_CMD copied in included. The supervisor insists on
# CLAUDOPILOT_FAILURE=secret, saves the failure and its detail to
# $RECORD/<phase>.supervisor, and rewrites the branch without .env (a soft
# reset to the merge base and one new commit), leaving .env untracked.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
if [ "${CLAUDOPILOT_ROLE:-}" = worker ]; then
	check_contract
	mkdir -p work
	echo "$phase" >"work/$phase.txt"
	git add -A
	git commit -q -m "$phase: work"
	finish
	exit 0
fi
: "${RECORD:?RECORD is not set}"
mkdir -p "$RECORD"
[ -n "$(cat)" ] || die "no prompt on stdin"
printf 'failure=%s\ndetail=%s\n' "${CLAUDOPILOT_FAILURE:-}" "${CLAUDOPILOT_FAILURE_DETAIL:-}" >"$RECORD/$phase.supervisor"
[ "${CLAUDOPILOT_FAILURE:-}" = secret ] || die "CLAUDOPILOT_FAILURE is '${CLAUDOPILOT_FAILURE:-}'"
git reset -q --soft "$(git merge-base HEAD "refs/heads/$CLAUDOPILOT_BASE")"
git rm -q --cached .env
git commit -q -m "$phase: work, without the secret"
