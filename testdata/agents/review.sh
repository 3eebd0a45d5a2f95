#!/bin/sh
# review.sh: a reviewer (REVIEW_CMD) that does what its phase doc says. The
# doc's fenced block tagged "reviewer",
#
#	```reviewer
#	if once blocked; then block "off by one in x"; else pass; fi
#	```
#
# is run with eval under `set -eu`, in the reviewer's read-only checkout.
# Without a block it passes. Before that it checks the reviewer's contract,
# and recomputes the fingerprint from the documented recipe. State that
# must outlive the checkout goes under $WORK (set by testscript).
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process

[ "${CLAUDOPILOT_ROLE:-}" = reviewer ] || die "CLAUDOPILOT_ROLE is '${CLAUDOPILOT_ROLE:-}'"
for v in CLAUDOPILOT_REVIEW_FINGERPRINT CLAUDOPILOT_REVIEW_HEAD CLAUDOPILOT_REVIEW_BASE \
	CLAUDOPILOT_MANIFEST_LINE_FILE CLAUDOPILOT_REVIEW_LENS CLAUDOPILOT_REVIEW_ROUND CLAUDOPILOT_PROMPT_FILE; do
	eval "val=\${$v:-}"
	[ -n "$val" ] || die "$v is empty"
done
[ ${#CLAUDOPILOT_REVIEW_HEAD} -eq 40 ] || die "CLAUDOPILOT_REVIEW_HEAD is not a full SHA"
[ ${#CLAUDOPILOT_REVIEW_BASE} -eq 40 ] || die "CLAUDOPILOT_REVIEW_BASE is not a full SHA"
# A read-only, detached checkout of exactly the head under review.
case "$(pwd -P)" in
*/.claudopilot/review/*) ;;
*) die "started in $(pwd -P), not in a review checkout" ;;
esac
# HEAD read as git reads it (read_head): no git process (#23).
read_head
case $head in "ref: "*) die "HEAD is on a branch" ;; esac
[ "$head" = "$CLAUDOPILOT_REVIEW_HEAD" ] || die "HEAD is not CLAUDOPILOT_REVIEW_HEAD"
[ -f "$doc" ] || die "the phase doc $doc is not in the checkout"
[ -z "$(find . -path ./.git -prune -o -type f -perm -u+w -print | head -1)" ] || die "the checkout is writable"
prompt=$(cat)
# Fixed strings, matched by the shell (no printf | grep per check, #23).
case $prompt in *"$CLAUDOPILOT_REVIEW_FINGERPRINT"*) ;; *) die "the prompt lacks the fingerprint" ;; esac
case $prompt in *"Your lens: $CLAUDOPILOT_REVIEW_LENS"*) ;; *) die "the prompt lacks the lens" ;; esac
# The manifest line file holds the line without its newline: read finds
# no whole line in it (and leaves the text in $line).
if IFS= read -r line <"$CLAUDOPILOT_MANIFEST_LINE_FILE"; then die "the manifest line ends in a newline"; fi
case $line in *"**$phase**"*) ;; *) die "the manifest line does not name $phase" ;; esac
# sha256 over head, base, the doc at head and the manifest line, joined by 0x1e.
fp=$({
	printf '%s\036%s\036' "$CLAUDOPILOT_REVIEW_HEAD" "$CLAUDOPILOT_REVIEW_BASE"
	git show "HEAD:$doc"
	printf '\036'
	printf '%s' "$line"
} | sha256sum)
fp=${fp%% *}
[ "$fp" = "$CLAUDOPILOT_REVIEW_FINGERPRINT" ] || die "fingerprint $CLAUDOPILOT_REVIEW_FINGERPRINT, recomputed $fp"
echo "$me: $phase: round $CLAUDOPILOT_REVIEW_ROUND, lens $CLAUDOPILOT_REVIEW_LENS: reading"

# --- helpers the blocks use ---

# marker VERDICT PHASE FINGERPRINT [FINDING...]: print a marker line.
marker() {
	v=$1 p=$2 f=$3
	shift 3
	fs=""
	for x in "$@"; do fs="$fs${fs:+,}\"$x\""; done
	printf '<!-- claudopilot-review:v1 {"fingerprint":"%s","phase":"%s","head":"%s","base":"%s","verdict":"%s","findings":[%s]} -->\n' \
		"$f" "$p" "$CLAUDOPILOT_REVIEW_HEAD" "$CLAUDOPILOT_REVIEW_BASE" "$v" "$fs"
}

pass() { marker PASS "$phase" "$CLAUDOPILOT_REVIEW_FINGERPRINT"; }

# block FINDING...: a BLOCKING verdict with these findings.
block() { marker BLOCKING "$phase" "$CLAUDOPILOT_REVIEW_FINGERPRINT" "$@"; }

# once NAME: true the first time it is asked for this phase, false after.
once() {
	mkdir -p "$WORK/.review"
	[ ! -e "$WORK/.review/$phase.$1" ] || return 1
	: >"$WORK/.review/$phase.$1"
}

# record: $RECORD/<phase>.reviewer-<n>.env gets the CLAUDOPILOT_* variables.
record() {
	: "${RECORD:?RECORD is not set}"
	mkdir -p "$RECORD"
	n=1
	while [ -e "$RECORD/$phase.reviewer-$n.env" ]; do n=$((n + 1)); done
	env | grep '^CLAUDOPILOT_' | sort >"$RECORD/$phase.reviewer-$n.env"
}

# waitfor FILE: wait (at most 30s) until FILE exists; exit 9 if it never does.
waitfor() {
	i=0
	until [ -e "$1" ]; do
		i=$((i + 1))
		[ $i -le 600 ] || die "waited in vain for $1"
		sleep 0.05
	done
}

# late_commit: a commit on the phase's branch after the review read it.
late_commit() {
	wt="$(dirname "$(git rev-parse --path-format=absolute --git-common-dir)")/.claudopilot/worktrees/$phase"
	git -C "$wt" commit -q --allow-empty -m "$phase: a commit after the review"
}

block_of reviewer "$doc"
if [ -z "$block" ]; then
	block='pass'
fi
eval "$block"
