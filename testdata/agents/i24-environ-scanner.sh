#!/bin/sh
# i24-environ-scanner.sh: a hostile agent (no sandbox) after the GitHub
# token while the driver pushes. It leaves a scanner behind that outlives
# the attempt (env -i drops the driver's process mark, setsid its group)
# and reads every process's /proc/<pid>/environ and cmdline in a loop,
# appending each one that holds the token to $REPORT, until $STOP exists;
# then it writes $DONE. It marks $SCANNER.up once it runs there. The token's shape is split so that the scanner's
# own files and arguments do not hold it (grep reads it from a file); $SCAN_ID is the
# run's own part of it, so another run's token on the same machine is not this one's. Then the agent commits a change, which the
# driver commits, pushes and merges while the scanner looks.
set -u
printf '%s%s%s\n' tok-sc an- "$SCAN_ID" >"$SCANNER.pat"
cat >"$SCANNER" <<'SCAN'
: >"$SCANNER.up"
n=0
while [ ! -e "$STOP" ]; do
	for f in $(grep -l -a -F -f "$SCANNER.pat" /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null); do
		d=${f%/*}
		echo "${f#/proc/} $(tr '\0' ' ' <"$d/cmdline" 2>/dev/null)" >>"$REPORT"
	done
	n=$((n + 1))
done
echo "$n" >"$DONE"
SCAN
env -i PATH="$PATH" STOP="$STOP" DONE="$DONE" REPORT="$REPORT" SCANNER="$SCANNER" setsid sh "$SCANNER" </dev/null >/dev/null 2>&1 &
# Wait until the scanner runs in its own session (at most 60 s): the
# driver stops the agent's process group when the agent ends, which on a
# busy machine can come before setsid: the scanner dies and never writes
# $DONE (the likely cause of TestQueueTokenNotInAnyGitsEnviron's one
# failure, at load 13-28).
i=0
while [ ! -e "$SCANNER.up" ] && [ $i -lt 1200 ]; do i=$((i + 1)); sleep 0.05; done
echo "scanned" >scanned.txt
git add -A && git commit -qm "scanner left behind"
