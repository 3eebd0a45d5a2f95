#!/bin/sh
# i5-scoped.sh: a worker that stays in its declared scope: it writes
# <first (owns: …) path>/<phase>.txt (work/ without owns), commits, renames
# its doc. I5_STRAY="<phase>:<path>" makes that phase also append a line to
# <path>, outside its scope, and commit it. BARRIER=N (with TRACE) holds it
# until $TRACE holds N starts (barrier in lib.sh), as slow-ok.sh does.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
trace start
check_contract
if [ -n "${BARRIER:-}" ]; then
	barrier "$BARRIER"
fi
owns=$(sed -n "s/.*\*\*$phase\*\*.*(owns: *\([^),]*\).*/\1/p" "$(dirname "$doc")/EXECUTION-MANIFEST.md")
dir=${owns:-work/}
mkdir -p "$dir"
echo "$phase" >"${dir%/}/$phase.txt"
git add -A "$dir"
git commit -q -m "$phase: work in $dir"
case "${I5_STRAY:-}" in
"$phase":*)
	stray=${I5_STRAY#"$phase":}
	mkdir -p "$(dirname "$stray")"
	echo "stray edit by $phase" >>"$stray"
	git add -A "$stray"
	git commit -q -m "$phase: stray edit of $stray"
	;;
esac
finish
trace end
