#!/bin/sh
# i5-conflict.sh: a worker whose change collides with its siblings': it
# rewrites the "shared" line of shared.txt as "shared: <phase>" and commits,
# then renames its doc. With I5_ORDER="a b c" a phase first waits (at most
# 30s) until the phases listed before it are [merged] in the base's
# committed manifest, so the order of the merges, and so which phase
# conflicts, is fixed. Relaunched (attempt > 1) with its doc already
# DONE_, it exits 0 at once: the phase looks done.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
trace start
if [ "${CLAUDOPILOT_ATTEMPT:-1}" -gt 1 ] && [ -f "$(dirname "$doc")/DONE_$(basename "$doc")" ]; then
	# Relaunched after a repair attempt: the phase looks done already.
	echo "$me: $phase: already done" >&2
	trace end
	exit 0
fi
check_contract
manifest="$(dirname "$doc")/EXECUTION-MANIFEST.md"
case " ${I5_ORDER:-} " in
*" $phase "*) ;;
*) I5_ORDER= ;; # not in the list: no wait
esac
for before in ${I5_ORDER:-}; do
	[ "$before" != "$phase" ] || break
	i=0
	until git show "refs/heads/$CLAUDOPILOT_BASE:$manifest" | grep -q "\[merged\] \*\*$before\*\*"; do
		i=$((i + 1))
		[ $i -lt 600 ] || { echo "$me: $phase: $before never merged" >&2; exit 7; }
		sleep 0.05
	done
done
sed "s/^shared\$/shared: $phase/" shared.txt >shared.txt.new
mv shared.txt.new shared.txt
grep -q "^shared: $phase\$" shared.txt || die "shared.txt has no shared line"
git commit -q -am "$phase: shared line"
finish
trace end
