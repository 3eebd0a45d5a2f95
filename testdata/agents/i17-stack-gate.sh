#!/bin/sh
# i17-stack-gate.sh: the gate of the stacking test. The merge gate of a's
# merge commit (run in .claudopilot/gate) is green only once b has started
# ($WORK/b-started): without stacking b waits for a's landing and never
# starts while it runs. The wait is bounded (STACK_WAIT tries of 0.05 s,
# default 1200: 60 s): a driver that does not stack fails here rather than
# hanging.
set -eu
case "$(pwd -P)" in
*/.claudopilot/gate*)
	case "$(git log -1 --format=%s HEAD)" in
	"Merge a:"*)
		i=0
		while [ ! -e "$WORK/b-started" ]; do
			i=$((i + 1))
			[ $i -lt "${STACK_WAIT:-1200}" ] || { echo "i17-stack-gate.sh: b did not start while a's gate ran" >&2; exit 1; }
			sleep 0.05
		done
		;;
	esac
	;;
esac
exit 0
