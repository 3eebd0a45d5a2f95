#!/bin/sh
# i22-secret-forms.sh: a worker that hides a token where the first secret
# scan did not look (#22 §1): in a merge commit's own changes only (taken
# out again by the next commit), in a binary file (it holds a NUL byte), in
# a commit message, split over two lines, base64-encoded, in one-line JSON
# and as a DB_PASS= assignment, and writes an allow comment on a token
# itself (only one the base holds is trusted). The supervisor insists on
# CLAUDOPILOT_FAILURE=secret, saves the failure and its detail to
# $RECORD/<phase>.supervisor, and rewrites the branch as one clean commit
# (a soft reset to the merge base, the secrets' files removed).
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
tok=ghp_Qw3rTy7uIo9pAs2dFg5hJk8lZx4cVb6nMm1R
if [ "${CLAUDOPILOT_ROLE:-}" = worker ]; then
	check_contract
	mkdir -p work
	echo "$phase" >"work/$phase.txt"
	git add -A work
	git commit -q -m "$phase: work"
	# A merge whose own change is the token, then removed.
	# (The side line is made detached: a sandbox lets no other branch be.)
	git checkout -q --detach
	echo side >work/side.txt
	git add work/side.txt
	git commit -q -m "$phase: side"
	side=$(git rev-parse HEAD)
	git checkout -q "$CLAUDOPILOT_BRANCH"
	git merge -q --no-ff --no-commit "$side"
	echo "t $tok" >work/evil.txt
	git add work/evil.txt
	git commit -q -m "$phase: merge side"
	git rm -q work/evil.txt
	git commit -q -m "$phase: tidy"
	printf 'x\000y key %s\n' "$tok" >work/blob.bin
	printf 'const t = "%s" +\n  "%s"\n' "$(echo $tok | cut -c1-12)" "$(echo $tok | cut -c13-)" >work/split.go
	printf 'creds: %s\n' "$(printf %s "$tok" | base64 | tr -d '\n')" >work/b64.yaml
	echo '{"db":{"password":"Hx7kq9Lm2p"}}' >work/cfg.json
	printf 'CACHE_KEY=users\nDB_PASS=s3cr3tP4ssw0rd\n' >work/app.env
	# Its own verdict: an allow comment on the token.
	printf 'const fake = "%s" // claudopilot:allow-secret github-token\n' "$tok" >work/fixture.go
	git add -A work
	git commit -q -m "$phase: more

token $tok"
	finish
	exit 0
fi
: "${RECORD:?RECORD is not set}"
mkdir -p "$RECORD"
[ -n "$(cat)" ] || die "no prompt on stdin"
printf 'failure=%s\ndetail=%s\n' "${CLAUDOPILOT_FAILURE:-}" "${CLAUDOPILOT_FAILURE_DETAIL:-}" >"$RECORD/$phase.supervisor"
[ "${CLAUDOPILOT_FAILURE:-}" = secret ] || die "CLAUDOPILOT_FAILURE is '${CLAUDOPILOT_FAILURE:-}'"
git reset -q --soft "$(git merge-base HEAD "refs/heads/$CLAUDOPILOT_BASE")"
git rm -q --cached work/blob.bin work/split.go work/b64.yaml work/cfg.json work/app.env work/fixture.go
rm -f work/blob.bin work/split.go work/b64.yaml work/cfg.json work/app.env work/fixture.go
git commit -q -m "$phase: work, without the secrets"
