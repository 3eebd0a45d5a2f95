#!/bin/sh
# checkdeps.sh: ok.sh that first checks that its worktree starts with the
# merged work of every dep: work/<dep>.txt, the dep's DONE_ doc, and the dep
# marked [merged] in the manifest. Exits 3 when one is missing. Commits the
# deps it checked as work/<phase>.deps.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
trace start
check_contract
dir=$(dirname "$doc")
for dep in $(deps_of "$phase"); do
	[ -f "work/$dep.txt" ] || { echo "$me: $phase: work/$dep.txt of dep $dep is missing" >&2; exit 3; }
	found=
	for f in "$dir/DONE_$dep"-*.md "$dir/DONE_$dep.md"; do
		[ ! -f "$f" ] || found=$f
	done
	[ -n "$found" ] || { echo "$me: $phase: no DONE_ doc of dep $dep in $dir" >&2; exit 3; }
	grep -q "\[merged\] \*\*$dep\*\*" "$dir/EXECUTION-MANIFEST.md" ||
		{ echo "$me: $phase: dep $dep is not [merged] in the manifest" >&2; exit 3; }
done
mkdir -p work
echo $(deps_of "$phase") >"work/$phase.deps" # what was checked, for the test to see
[ ! -e "work/$phase.txt" ] || { echo "$me: $phase: work/$phase.txt exists before the work" >&2; exit 3; }
do_work
finish
trace end
