#!/bin/sh
# i5-escape.sh: ok.sh, and then, for the phases I5_ESCAPE names
# ("<phase>:checkout <phase>:rmdir ..."), it breaks its worktree on the way
# out:
#   checkout  `git checkout -b elsewhere-<phase>` and a commit there: HEAD
#             is no longer auto/<phase>;
#   rmdir     removes its own worktree folder (cd / && rm -rf it).
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
trace start
check_contract
do_work
finish
mode=
for m in ${I5_ESCAPE:-}; do
	case "$m" in "$phase":*) mode=${m#"$phase":} ;; esac
done
case "$mode" in
checkout)
	git checkout -q -b "elsewhere-$phase"
	echo "$phase elsewhere" >"work/$phase.elsewhere"
	git add work
	git commit -q -m "$phase: work elsewhere"
	;;
rmdir)
	wt=$(pwd -P)
	cd /
	rm -rf "$wt"
	[ ! -e "$wt" ] || die "could not remove $wt"
	;;
"") ;;
*) die "unknown I5_ESCAPE mode $mode" ;;
esac
trace end
