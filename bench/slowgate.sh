#!/usr/bin/env bash
# The slow-gate roadmap of issue 25: PHASES phases (default 20) in a random
# DAG of width about WIDTH (default 4), agents that sleep AGENT_SLEEP
# seconds (default 1), rename their doc and commit, a merge gate `sleep
# GATE_SLEEP` (default 10), MAX_PARALLEL PARALLEL (default 4). Prints the
# wall time and the gate-counting bound (BENCHMARKS.md, "A slow gate"):
# the best schedule where every agent takes A = AGENT_SLEEP, every gate
# G = GATE_SLEEP, K gates run at once (GATE_SLOTS, default min(2, cores))
# and a gate lands a car of up to B phases (MERGE_BATCH, default 8):
#
#   bound = max(chain, A + G x ceil(ceil(N / B) / K), A x ceil(N / P) + G)
#
# chain is the latest landing of the DAG with every phase as early as the
# rules allow: land(p) = max(done(p) + G, land(deps)), done(p) = start(p) + A,
# and start(p) = max land(deps); with STACK=1 a phase may start on one
# dependency that is done but not landed: start(p) = min over that d of
# max(done(d), land(the other deps)). Without STACK every phase waits for
# its dependencies to land, so chain = depth x (A + G) (the bound before,
# valid and reached by one car per level); with STACK=1 that is no lower
# bound (a stacked chain runs its agents back to back and shares gates),
# hence the recurrence. The second term counts the gates (N phases, cars of
# B, K at once), the third the agents (MAX_PARALLEL P). The bound ignores
# the driver's own time and every process's start-up.
#
#   bench/slowgate.sh                              # the defaults of the time
#   GATE_SLOTS=1 MERGE_BATCH=1 bench/slowgate.sh   # any setting passes through
#   SEED=2 bench/slowgate.sh                       # another DAG
#   CLAUDOPILOT_BIN=/path/claudopilot bench/slowgate.sh  # no build
#   DRIVER=ts TS_DIR=/path/to/v1.0.0 bench/slowgate.sh  # Claudopilot TS v1.0
#   RUN_ARGS=--json KEEP=1 bench/slowgate.sh       # more flags to `run`; keep the repo
#
# After a claudopilot run it prints where the time went, per level of the
# DAG, from the run's journal (see the end of this file).
#
# DRIVER=ts runs Claudopilot TS v1.0 (jopnick/claudopilot at v1.0.0, its
# tree in TS_DIR: `git -C <clone> archive v1.0.0 | tar -x -C TS_DIR`) on
# the same DAG with its own defaults (POLL_SECONDS 5) and MAX_PARALLEL P.
# It never gates a merge: its worker contract is "build, gate, rename the
# doc", so its fake agent (a `claude` on PATH) sleeps A, runs the gate
# itself, renames and commits; the driver merges serially. `claudopilot
# run` of v1.0 always starts Docker workers (a Playwright image); its
# driver's host mode (worktrees, the agent as a subprocess, what its tests
# and the plugin use) is started by bench/slowgate-ts.mjs, bundled with the
# package's own tsup after `npm install` in TS_DIR.
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

DRIVER=${DRIVER:-claudopilot}
if [ "$DRIVER" = ts ]; then
	[ -n "${TS_DIR:-}" ] && [ -f "$TS_DIR/src/orchestrator/driver.ts" ] || {
		echo "DRIVER=ts needs TS_DIR: jopnick/claudopilot's v1.0.0 tree" >&2
		exit 2
	}
	if [ ! -f "$TS_DIR/dist-bench/slowgate-ts.js" ]; then
		echo "building Claudopilot TS v1.0 in $TS_DIR..." >&2
		cp "$here/slowgate-ts.mjs" "$TS_DIR/src/slowgate-ts.ts"
		(cd "$TS_DIR" && { [ -d node_modules ] || npm install --no-audit --no-fund; } &&
			npx tsup src/slowgate-ts.ts --format esm --platform node --target node18 -d dist-bench) >&2
	fi
elif [ -n "${CLAUDOPILOT_BIN:-}" ]; then
	cp "$CLAUDOPILOT_BIN" "$T/claudopilot"
else
	echo "building claudopilot..." >&2
	(cd "$src" && go build -o "$T/claudopilot" .)
fi

# A layered random DAG: phase p sits in level (p-1)/WIDTH; each phase past
# the first level depends on one or two phases of the level before.
RANDOM=$SEED
declare -a deps depth da db
maxdepth=0
for p in $(seq 1 "$PHASES"); do
	lvl=$(((p - 1) / WIDTH))
	deps[p]=none
	depth[p]=1
	da[p]=0
	db[p]=0
	if [ "$lvl" -gt 0 ]; then
		lo=$(((lvl - 1) * WIDTH + 1))
		a=$((lo + RANDOM % WIDTH))
		b=$((lo + RANDOM % WIDTH))
		da[p]=$a
		db[p]=$b
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
	if [ "$DRIVER" = ts ]; then
		mkdir -p .claudopilot/prompts
		echo "Do the phase." >.claudopilot/prompts/worker.md
		echo "Fix the phase." >.claudopilot/prompts/supervisor.md
		echo ".claudopilot/.run/" >.gitignore
	fi
	git init -q -b main
	git config gc.auto 0
	git add -A
	git commit -qm "slow gate roadmap"
	# v1.0 refuses to land on main: it runs from a runner branch.
	[ "$DRIVER" != ts ] || git checkout -qb autonomous-runner
)
base=main
[ "$DRIVER" != ts ] || base=autonomous-runner

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

if [ "$DRIVER" = ts ]; then
	# The fake `claude`: the phase id is in the prompt's last lines.
	mkdir -p "$T/bin"
	cat >"$T/bin/claude" <<EOF
#!/bin/sh
set -e
id=\$(printf '%s\n' "\$@" | sed -n 's/^The phase to execute is: //p' | head -1)
sleep $AGENT_SLEEP
sleep $GATE_SLEEP
git mv "roadmap/\$id.md" "roadmap/DONE_\$id.md"
git commit -qm done
EOF
	chmod +x "$T/bin/claude"
fi
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
start=$EPOCHREALTIME
if [ "$DRIVER" = ts ]; then
	(cd "$repo" && PATH="$T/bin:$PATH" ROADMAP_DIR=roadmap MAX_PARALLEL="$PARALLEL" GATE_CMD="sleep $GATE_SLEEP" \
		node "$TS_DIR/dist-bench/slowgate-ts.js" >"$T/run.log" 2>&1) || {
		tail -40 "$T/run.log" >&2
		exit 1
	}
else
	(cd "$repo" && "$T/claudopilot" run --base main --agent "$T/agent.sh" --max-parallel "$PARALLEL" --gate "sleep $GATE_SLEEP" ${RUN_ARGS:-} roadmap/ >"$T/run.log" 2>&1) || {
		tail -40 "$T/run.log" >&2
		exit 1
	}
fi
end=$EPOCHREALTIME
n=$(git -C "$repo" ls-tree --name-only "$base" roadmap/ | grep -c '^roadmap/DONE_' || true)
[ "$n" = "$PHASES" ] || {
	echo "$n of $PHASES docs renamed on $base" >&2
	exit 1
}
wall=$(bc -l <<<"$end - $start")
# The bound (see the top of this file), in whole seconds.
stack=${STACK:-0}
batch=${MERGE_BATCH:-8}
slots=${GATE_SLOTS:-$(($(nproc) < 2 ? $(nproc) : 2))}
declare -a fin land
chain=0
for p in $(seq 1 "$PHASES"); do
	a=${da[p]} b=${db[p]}
	if [ "$a" = 0 ]; then
		start=0
	else
		la=${land[a]} lb=${land[b]}
		start=$((la > lb ? la : lb))
		if [ "$stack" = 1 ] && [ "$a" != "$b" ]; then
			sa=$((fin[a] > lb ? fin[a] : lb)) # stacked on a
			sb=$((fin[b] > la ? fin[b] : la)) # stacked on b
			start=$((sa < sb ? sa : sb))
		elif [ "$stack" = 1 ]; then
			start=${fin[a]}
		fi
	fi
	fin[p]=$((start + AGENT_SLEEP))
	land[p]=$((fin[p] + GATE_SLEEP))
	if [ "$a" != 0 ]; then
		[ "${land[p]}" -ge "$la" ] || land[p]=$la
		[ "${land[p]}" -ge "$lb" ] || land[p]=$lb
	fi
	[ "${land[p]}" -le "$chain" ] || chain=${land[p]}
done
cars=$(((PHASES + batch - 1) / batch))
gates=$((AGENT_SLEEP + GATE_SLEEP * ((cars + slots - 1) / slots)))
agents=$((AGENT_SLEEP * ((PHASES + PARALLEL - 1) / PARALLEL) + GATE_SLEEP))
bound=$chain
[ "$gates" -le "$bound" ] || bound=$gates
[ "$agents" -le "$bound" ] || bound=$agents
echo
echo "machine: $(nproc) cores, git $(git --version | cut -d' ' -f3-), load after $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$DRIVER" != ts ] || echo "driver: Claudopilot TS $(node -p "require('$TS_DIR/package.json').version") (host mode, POLL_SECONDS ${POLL_SECONDS:-5}), gate in its worker"
echo "claudopilot built from $(git -C "$src" rev-parse --short HEAD); settings from the environment: $(env | grep -E '^(GATE_SLOTS|MERGE_BATCH|STACK|TRAIN_WAIT_SECONDS|SANDBOX)=' | tr '\n' ' ')"
echo "roadmap: $PHASES phases, width $WIDTH, seed $SEED, depth $maxdepth; agent ${AGENT_SLEEP}s, gate sleep ${GATE_SLEEP}, MAX_PARALLEL $PARALLEL, in ${TMPDIR:-/tmp}"
echo "first-parent commits on $base after the run: $(git -C "$repo" rev-list --first-parent --count "$base") (1 is the roadmap's)"
echo "bound terms: chain $chain s (STACK=$stack), gates $gates s (MERGE_BATCH $batch, GATE_SLOTS $slots), agents $agents s; depth x (agent + gate) = $((maxdepth * (AGENT_SLEEP + GATE_SLEEP))) s"
printf 'wall %.1f s; bound %d s; wall / bound %.2fx\n' "$wall" "$bound" "$(bc -l <<<"$wall / $bound")"

# Where the time went (claudopilot): per level of the DAG, the moments the
# level's last phase reached each stage, from the run's journal, each as
# the time since the stage before: its deps landed (ready), the driver
# launched its attempt (launch), the agent's process started (worktree,
# sandbox: start), the attempt was done (agent, its exit, the checks:
# done), its car's gate started (train wait, build, a free slot: gate),
# the car landed (gate, publish: land). A level's time is the sum; the
# bound's share of it is A + G.
journal=$repo/.claudopilot/state/journal.jsonl
[ "$DRIVER" != ts ] && [ -f "$journal" ] || exit 0
for p in $(seq 1 "$PHASES"); do
	printf 'phase-%02d %d %d %d\n' "$p" "${depth[p]}" "${da[p]}" "${db[p]}"
done | awk -v A="$AGENT_SLEEP" -v G="$GATE_SLEEP" '
function sec(t,  hms) { split(substr(t, 12, 18), hms, ":"); return hms[1] * 3600 + hms[2] * 60 + hms[3] }
NR == FNR { lvl[$1] = $2; da[$1] = $3; db[$1] = $4; n++; next }
{
	if (!match($0, /"t":"[^"]*"/)) next
	t = sec(substr($0, RSTART + 5, RLENGTH - 6))
	if (t0 == "") t0 = t
	t -= t0
	if (!match($0, /"phase":"[^"]*"/)) next
	id = substr($0, RSTART + 9, RLENGTH - 10)
	if (!match($0, /"ev":"[^"]*"/)) next
	ev = substr($0, RSTART + 6, RLENGTH - 7)
	if (ev == "launch" || ev == "pgid" || ev == "done" || ev == "gate") at[id, ev] = t
	if (ev == "merged" && !((id, ev) in at)) at[id, ev] = t
}
END {
	split("launch pgid done gate merged", st, " ")
	for (i = 1; i <= n; i++) {
		id = sprintf("phase-%02d", i); L = lvl[id]
		r = 0; x = 0; y = 0
		if (da[id] > 0) { x = at[sprintf("phase-%02d", da[id]), "merged"]; y = at[sprintf("phase-%02d", db[id]), "merged"]; r = x > y ? x : y }
		if (!(L in ready) || r > ready[L]) ready[L] = r
		for (k = 1; k <= 5; k++) if (!((L, k) in last) || at[id, st[k]] > last[L, k]) last[L, k] = at[id, st[k]]
		if (L > depth) depth = L
	}
	print ""
	print "where the time went, per level (s; each stage of the level'"'"'s last phase since the stage before):"
	printf "%-6s %7s %7s %7s %7s %7s %7s %7s\n", "level", "ready", "launch", "start", "done", "gate", "land", "level"
	for (L = 1; L <= depth; L++) {
		prev = ready[L]; line = sprintf("%-6d %7.2f", L, ready[L])
		for (k = 1; k <= 5; k++) { d = last[L, k] - prev; sum[k] += d; line = line sprintf(" %7.2f", d); prev = last[L, k] }
		tot += prev - ready[L]
		print line sprintf(" %7.2f", prev - ready[L])
	}
	line = sprintf("%-6s %7s", "sum", "")
	for (k = 1; k <= 5; k++) line = line sprintf(" %7.2f", sum[k])
	print line sprintf(" %7.2f", tot)
	printf "bound share per level: agent %d + gate %d = %d s\n", A, G, A + G
}' - "$journal"
