#!/bin/sh
# i17-predict.sh: for the conflict-prediction test. Both phases write
# shared.txt apart and commit, then wait until the journal holds the
# conflict predicted for them (at most 60 s); phase a also saves
# `claudopilot status`, `status --json` and `explain a` meanwhile. Phase b
# finishes only after a has saved them: b's merge clears the prediction, so
# a b that lands first would leave a's explain nothing to find.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
check_contract
echo "$phase" >shared.txt
git add shared.txt
git commit -q -m "$phase: shared"
top=$(git rev-parse --path-format=absolute --git-common-dir)/..
j=$top/.claudopilot/state/journal.jsonl
i=0
until grep -q "\"phase\":\"$phase\",\"ev\":\"conflict\",\"detail\"" "$j" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 1200 ] || die "no conflict predicted"
	sleep 0.05
done
if [ "$phase" = a ]; then
	(cd "$top" && claudopilot status >"$WORK/status.txt" 2>&1 && claudopilot status --json >"$WORK/status.json" 2>&1 && claudopilot explain a >"$WORK/explain.txt" 2>&1) || die "status or explain failed"
	: >"$WORK/views.saved"
else
	i=0
	until [ -e "$WORK/views.saved" ]; do
		i=$((i + 1))
		[ $i -lt 1200 ] || die "a never saved its views"
		sleep 0.05
	done
fi
finish
