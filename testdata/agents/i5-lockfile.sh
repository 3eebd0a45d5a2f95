#!/bin/sh
# i5-lockfile.sh: a worker that adds a dependency: it writes
# deps/<phase>.dep (the "go.mod" side, one line) and appends the same line
# at the end of go.sum, where every sibling appends too, so only go.sum
# conflicts. I5_ORDER works as in i5-conflict.sh.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
trace start
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
line="example.com/$phase v1.0.0 h1:$phase="
mkdir -p deps
echo "$line" >"deps/$phase.dep"
echo "$line" >>go.sum
git add deps go.sum
git commit -q -m "$phase: require example.com/$phase"
finish
trace end
