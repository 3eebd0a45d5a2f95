#!/bin/sh
# i5-hostile-manifest.sh: a worker that tampers with the manifest on its
# branch. I5_HOSTILE="<phase>:edit <phase>:delete ..." picks what a phase
# does before its ok.sh work:
#   edit    flips phase-02 to [merged] and phase-04 to [pending], deletes the
#           phase-03 line, sets **Status:** complete, appends a HOSTILE line;
#   delete  removes the manifest (git rm);
# and commits that. A phase with neither checks that its manifest holds no
# HOSTILE line. I5_ORDER works as in i5-conflict.sh.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
trace start
check_contract
manifest="$(dirname "$doc")/EXECUTION-MANIFEST.md"
case " ${I5_ORDER:-} " in
*" $phase "*) ;;
*) I5_ORDER= ;;
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
mode=
for m in ${I5_HOSTILE:-}; do
	case "$m" in "$phase":*) mode=${m#"$phase":} ;; esac
done
case "$mode" in
edit)
	sed -e 's/\[[a-z]*\] \*\*phase-02\*\*/[merged] **phase-02**/' \
		-e 's/\[[a-z]*\] \*\*phase-04\*\*/[pending] **phase-04**/' \
		-e '/\*\*phase-03\*\*/d' \
		-e 's/^\*\*Status:\*\* .*/**Status:** complete/' "$manifest" >"$manifest.new"
	echo "HOSTILE edit by $phase" >>"$manifest.new"
	mv "$manifest.new" "$manifest"
	git commit -q -am "$phase: edit the manifest"
	;;
delete)
	git rm -q "$manifest"
	git commit -q -m "$phase: delete the manifest"
	;;
"")
	[ ! -f "$manifest" ] || ! grep -q HOSTILE "$manifest" || die "the manifest holds a HOSTILE line"
	;;
*) die "unknown I5_HOSTILE mode $mode" ;;
esac
do_work
finish
trace end
