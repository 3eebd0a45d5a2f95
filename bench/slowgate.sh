#!/usr/bin/env bash
# The slow-gate roadmap of issue 25: PHASES phases (default 20) in a random
# DAG of width about WIDTH (default 4), agents that sleep AGENT_SLEEP
# seconds (default 1), rename their doc and commit, a merge gate `sleep
# GATE_SLEEP` (default 10), MAX_PARALLEL PARALLEL (default 4). Prints the
# wall time and the gate-counting bound (BENCHMARKS.md, "A slow gate"):
#
#   bound = depth x (AGENT_SLEEP + GATE_SLEEP)
#
# depth being the phases on the DAG's longest chain: without stacking, a
# phase starts only once its dependencies have landed, and nothing lands
# ungated, so every phase of that chain costs its agent and one gate
# however many gates run at once (a level's phases can share one gate in a
# train). The bound ignores the driver's own time.
#
#   bench/slowgate.sh                              # the defaults of the time
#   GATE_SLOTS=1 MERGE_BATCH=1 bench/slowgate.sh   # any setting passes through
#   SEED=2 bench/slowgate.sh                       # another DAG
#
# Self-contained: builds claudopilot from this checkout, makes its repo
# under a temp folder (TMPDIR) and removes it (KEEP=1 keeps it).
set -euo pipefail

PHASES=${PHASES:-20}
WIDTH=${WIDTH:-4}
SEED=${SEED:-1}
AGENT_SLEEP=${AGENT_SLEEP:-1}
GATE_SLEEP=${GATE_SLEEP:-10}
PARALLEL=${PARALLEL:-4}
KEEP=${KEEP:-0}

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/claudopilot-slowgate.XXXXXX")
cleanup() { if [ "$KEEP" = 1 ]; then echo "kept $T" >&2; else rm -rf "$T"; fi; }
trap cleanup EXIT

export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE
export NO_COLOR=1 LC_ALL=C

echo "building claudopilot..." >&2
(cd "$src" && go build -o "$T/claudopilot" .)

# A layered random DAG: phase p sits in level (p-1)/WIDTH; each phase past
# the first level depends on one or two phases of the level before.
RANDOM=$SEED
declare -a deps depth
maxdepth=0
for p in $(seq 1 "$PHASES"); do
	lvl=$(((p - 1) / WIDTH))
	deps[p]=none
	depth[p]=1
	if [ "$lvl" -gt 0 ]; then
		lo=$(((lvl - 1) * WIDTH + 1))
		a=$((lo + RANDOM % WIDTH))
		b=$((lo + RANDOM % WIDTH))
		deps[p]=$(printf 'phase-%02d' "$a")
		[ "$b" = "$a" ] || deps[p]+=$(printf ', phase-%02d' "$b")
		d=$((depth[a] > depth[b] ? depth[a] : depth[b]))
		depth[p]=$((d + 1))
	fi
	[ "${depth[p]}" -le "$maxdepth" ] || maxdepth=${depth[p]}
done

repo="$T/repo"
mkdir -p "$repo/roadmap"
(
	cd "$repo"
	echo "slow gate bench" >README.md
	{
		printf '# Execution Manifest\n\n**Status:** in-progress\n\n## Phases\n\n'
		for p in $(seq 1 "$PHASES"); do
			printf '%d. [pending] **phase-%02d** — phase %d (deps: %s)\n' "$p" "$p" "$p" "${deps[p]}"
		done
	} >roadmap/EXECUTION-MANIFEST.md
	for p in $(seq 1 "$PHASES"); do
		printf '# phase-%02d\n\nRename this doc.\n' "$p" >"roadmap/phase-$(printf %02d "$p").md"
	done
	git init -q -b main
	git config gc.auto 0
	git add -A
	git commit -qm "slow gate roadmap"
)

cat >"$T/agent.sh" <<EOF
#!/bin/sh
set -e
sleep $AGENT_SLEEP
EOF
cat >>"$T/agent.sh" <<'EOF'
doc=$CLAUDOPILOT_PHASE_DOC
git mv "$doc" "$(dirname "$doc")/DONE_$(basename "$doc")"
git commit -qm done
EOF
chmod +x "$T/agent.sh"

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
start=$EPOCHREALTIME
(cd "$repo" && "$T/claudopilot" run --base main --agent "$T/agent.sh" --max-parallel "$PARALLEL" --gate "sleep $GATE_SLEEP" roadmap/ >"$T/run.log" 2>&1) || {
	tail -40 "$T/run.log" >&2
	exit 1
}
end=$EPOCHREALTIME
n=$(git -C "$repo" ls-tree --name-only main roadmap/ | grep -c '^roadmap/DONE_' || true)
[ "$n" = "$PHASES" ] || {
	echo "$n of $PHASES docs renamed on main" >&2
	exit 1
}
wall=$(bc -l <<<"$end - $start")
bound=$((maxdepth * (AGENT_SLEEP + GATE_SLEEP)))
echo
echo "machine: $(nproc) cores, git $(git --version | cut -d' ' -f3-), load after $(cut -d' ' -f1-3 /proc/loadavg)"
echo "claudopilot built from $(git -C "$src" rev-parse --short HEAD); settings from the environment: $(env | grep -E '^(GATE_SLOTS|MERGE_BATCH|STACK|TRAIN_WAIT_SECONDS|SANDBOX)=' | tr '\n' ' ')"
echo "roadmap: $PHASES phases, width $WIDTH, seed $SEED, depth $maxdepth; agent ${AGENT_SLEEP}s, gate sleep ${GATE_SLEEP}, MAX_PARALLEL $PARALLEL, in ${TMPDIR:-/tmp}"
echo "first-parent commits on main after the run: $(git -C "$repo" rev-list --first-parent --count main) (1 is the roadmap's)"
printf 'wall %.1f s; bound %d s; wall / bound %.2fx\n' "$wall" "$bound" "$(bc -l <<<"$wall / $bound")"
