#!/usr/bin/env bash
# Start-up cost of a large roadmap: seconds from `claudopilot run` to the
# first agent running, on a roadmap of PHASES independent phases (one doc
# each, committed), MAX_PARALLEL 1. The agent only records that it started.
#
#   bench/firstlaunch.sh                        # PHASES=2000 RUNS=3
#   BIN=/path/to/claudopilot bench/firstlaunch.sh   # time another build
#   TMPDIR=/dev/shm bench/firstlaunch.sh        # without the disk
#
# Builds claudopilot from this checkout unless BIN is given; makes its repo
# under a temp folder and removes it. Prints one line per run.
set -euo pipefail

PHASES=${PHASES:-2000}
RUNS=${RUNS:-3}

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/claudopilot-firstlaunch.XXXXXX")
trap 'rm -rf "$T"' EXIT
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE

BIN=${BIN:-}
if [ -z "$BIN" ]; then
	(cd "$src" && go build -o "$T/claudopilot" .)
	BIN=$T/claudopilot
fi

cat >"$T/agent.sh" <<AGENT
#!/bin/sh
date +%s.%N >>"$T/started"
exec sleep 1000
AGENT
chmod +x "$T/agent.sh"

for run in $(seq 1 "$RUNS"); do
	r="$T/repo$run"
	mkdir -p "$r/roadmap"
	(
		cd "$r"
		git init -q -b main
		{
			printf '# Execution Manifest\n\n'
			for i in $(seq 1 "$PHASES"); do
				printf '%d. [pending] **p%d** — phase %d (deps: none)\n' "$i" "$i" "$i"
				printf '# p%d\n' "$i" >"roadmap/p$i.md"
			done
		} >roadmap/EXECUTION-MANIFEST.md
		git add -A && git commit -qm roadmap
	)
	rm -f "$T/started"
	start=$(date +%s.%N)
	(cd "$r" && exec "$BIN" run --base main --agent "$T/agent.sh" --max-parallel 1 --json >"$T/events" 2>"$T/err") &
	pid=$!
	while [ ! -s "$T/started" ]; do
		kill -0 "$pid" 2>/dev/null || { cat "$T/err" >&2; exit 1; }
		sleep 0.05
	done
	agent=$(head -1 "$T/started")
	kill -INT "$pid"
	wait "$pid" || true
	launch=$(grep -m1 '"event":"launch"' "$T/events" | sed 's/.*"time":"\([^"]*\)".*/\1/')
	printf 'run %d: %d phases: launch event after %.2f s, agent running after %.2f s\n' "$run" "$PHASES" \
		"$(echo "$(date -d "$launch" +%s.%N) - $start" | bc)" "$(echo "$agent - $start" | bc)"
done
