#!/usr/bin/env bash
# Driver overhead per phase: claudopilot vs the bare git commands the same
# work needs, on a repository of FILES files (one commit), PHASES
# independent phases, MAX_PARALLEL 1, an agent that only renames the phase
# doc to DONE_ and commits, gate `true`.
#
#   bench/overhead.sh                 # FILES=20000 PHASES=10 RUNS=3
#   PROFILE=1 bench/overhead.sh       # also count and time every git call
#   FILES=2000 PHASES=5 RUNS=1 bench/overhead.sh   # quick look
#   PHASES=40 PARALLEL=8 AGENT_SLEEP=0.2 bench/overhead.sh   # landing throughput (#17)
#   FSYNC=1 bench/overhead.sh         # also count fsyncs (strace -f), the journal's apart
#
# With AGENT_SLEEP (seconds, default 0) each agent sleeps that long first,
# and the run has MAX_PARALLEL PARALLEL (default 1). The bare script stays
# serial; the ratio printed last compares claudopilot's wall time with the
# bare wall time plus the agents' time at that parallelism
# (PHASES x AGENT_SLEEP / PARALLEL).
#
# Self-contained: builds claudopilot from this checkout, makes its repos
# under a temp folder and removes them (KEEP=1 keeps them). Prints a table.
set -euo pipefail

FILES=${FILES:-20000}
PHASES=${PHASES:-10}
RUNS=${RUNS:-3}
PROFILE=${PROFILE:-0}
PARALLEL=${PARALLEL:-1}
AGENT_SLEEP=${AGENT_SLEEP:-0}
FSYNC=${FSYNC:-0}
KEEP=${KEEP:-0}

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/claudopilot-overhead.XXXXXX")
cleanup() { if [ "$KEEP" = 1 ]; then echo "kept $T" >&2; else rm -rf "$T"; fi; }
trap cleanup EXIT

REAL_GIT=$(command -v git)
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE
export NO_COLOR=1 LC_ALL=C


echo "building claudopilot..." >&2
(cd "$src" && go build -o "$T/claudopilot" .)

# ---------------------------------------------------------------- template repo
echo "making a repository of $FILES files and $PHASES phases..." >&2
tpl="$T/template"
mkdir -p "$tpl"
(
	cd "$tpl"
	i=0
	while [ "$i" -lt "$FILES" ]; do
		printf -v d 'src/d%02d/e%02d' $((i / 1000)) $((i / 50 % 20))
		[ -d "$d" ] || mkdir -p "$d"
		printf 'file %d\nline two\n' "$i" >"$d/f$((i % 50)).txt"
		i=$((i + 1))
	done
	mkdir roadmap
	{
		printf '# Execution Manifest\n\n**Status:** in-progress\n\n## Phases\n\n'
		for p in $(seq 1 "$PHASES"); do
			printf '%d. [pending] **phase-%02d** — phase %d (deps: none)\n' "$p" "$p" "$p"
		done
	} >roadmap/EXECUTION-MANIFEST.md
	for p in $(seq 1 "$PHASES"); do
		printf '# phase-%02d\n\nRename this doc.\n' "$p" >"roadmap/phase-$(printf %02d "$p").md"
	done
	git init -q -b main
	git config user.name bench
	git config user.email bench@example.com
	git config gc.auto 0 # no background gc racing the copies or the timings
	git add -A
	git commit -qm "$FILES files"
	git gc -q # packed, as a real repository is
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

# The bare git work for the same phases, as a script, run in the repo.
cat >"$T/bare.sh" <<'EOF'
#!/usr/bin/env bash
set -euo pipefail
phases=$1
mkdir -p .claudopilot/worktrees
grep -qx '/.claudopilot/' .git/info/exclude 2>/dev/null || echo '/.claudopilot/' >>.git/info/exclude
for p in $(seq 1 "$phases"); do
	id=$(printf 'phase-%02d' "$p")
	wt=.claudopilot/worktrees/$id
	git worktree add -q -b "auto/$id" "$wt" main
	git -C "$wt" mv "roadmap/$id.md" "roadmap/DONE_$id.md"
	git -C "$wt" commit -qm done
	git merge -q --no-ff --no-edit "auto/$id"
	git worktree remove "$wt"
	git branch -q -d "auto/$id"
done
EOF
chmod +x "$T/bare.sh"

# A git that logs every call: start, end, exit code, argv.
mkdir -p "$T/shim"
cat >"$T/shim/git" <<EOF
#!/usr/bin/env bash
s=\$EPOCHREALTIME
"$REAL_GIT" "\$@"
rc=\$?
printf '%s\t%s\t%s\t%s\t%s\n' "\$s" "\$EPOCHREALTIME" "\$rc" "\$*" "\$PWD" >>"\$GITLOG"
exit \$rc
EOF
chmod +x "$T/shim/git"

fresh() { # fresh copy of the template
	rm -rf "$T/repo"
	cp -a "$tpl" "$T/repo"
}

check_done() { # every phase merged and renamed on main
	local n
	n=$(git -C "$T/repo" ls-tree --name-only main roadmap/ | grep -c '^roadmap/DONE_' || true)
	if [ "$n" != "$PHASES" ]; then
		echo "$1: $n of $PHASES docs renamed on main" >&2
		exit 1
	fi
}

# timed: runs "$@" and prints "wall_ms cpu_ms", cpu being user+sys of the
# whole process tree (git, agents, gates included). CPU time is much less
# disturbed by other load on the machine than wall time.
timed() {
	local out TIMEFORMAT='%3R %3U %3S'
	out=$({ time "$@" >"$T/run.log" 2>&1; } 2>&1) || { cat "$T/run.log" >&2; exit 1; }
	awk '{ printf "%d %d\n", $1 * 1000, ($2 + $3) * 1000 }' <<<"$out"
}

run_bare() {
	fresh
	(cd "$T/repo" && timed "$T/bare.sh" "$PHASES")
	check_done bare
}

run_claudopilot() {
	fresh
	(cd "$T/repo" && timed "$T/claudopilot" run --base main --agent "$T/agent.sh" --max-parallel "$PARALLEL" --gate true roadmap/)
	check_done claudopilot
}

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }
minimum() { printf '%s\n' "$@" | sort -n | head -1; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
bw=() bc=() cw=() cc=()
for r in $(seq 1 "$RUNS"); do # interleaved, so a busy spell hits both
	out=$(run_bare) || exit 1
	read -r w c <<<"$out"
	bw+=("$w") bc+=("$c")
	out=$(run_claudopilot) || exit 1
	read -r w c <<<"$out"
	cw+=("$w") cc+=("$c")
	echo "run $r: bare ${bw[-1]} ms (cpu ${bc[-1]}), claudopilot ${cw[-1]} ms (cpu ${cc[-1]})" >&2
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

row() { # label, values...
	local label=$1
	shift
	printf '%-18s' "$label"
	for v in "$@"; do printf ' %8d' "$v"; done
	local med mn
	med=$(median "$@") mn=$(minimum "$@")
	printf ' %8d %8d %10.3f %10.3f\n' "$med" "$mn" "$(bc -l <<<"$med / $PHASES / 1000")" "$(bc -l <<<"$mn / $PHASES / 1000")"
}

echo
echo "machine: $(nproc) cores, git $(git --version | cut -d' ' -f3-), $(go version | cut -d' ' -f3), load after $load_after"
echo "claudopilot built from $(git -C "$src" rev-parse --short HEAD)$(git -C "$src" diff --quiet HEAD -- . ':!bench' ':!BENCHMARKS.md' 2>/dev/null || echo ' + uncommitted changes')"
echo "repo: $FILES files, $PHASES independent phases, MAX_PARALLEL $PARALLEL, agent sleep ${AGENT_SLEEP}s, gate true, $RUNS runs, in ${TMPDIR:-/tmp} (ms)"
printf '%-18s' ""
for r in $(seq 1 "$RUNS"); do printf ' %8s' "run$r"; done
printf ' %8s %8s %10s %10s\n' median min "s/ph(med)" "s/ph(min)"
row "bare wall" "${bw[@]}"
row "claudopilot wall" "${cw[@]}"
row "bare cpu" "${bc[@]}"
row "claudopilot cpu" "${cc[@]}"
printf 'claudopilot/bare: wall median %.2fx, min %.2fx; cpu median %.2fx, min %.2fx (target: 1.5x or less)\n' \
	"$(bc -l <<<"$(median "${cw[@]}") / $(median "${bw[@]}")")" "$(bc -l <<<"$(minimum "${cw[@]}") / $(minimum "${bw[@]}")")" \
	"$(bc -l <<<"$(median "${cc[@]}") / $(median "${bc[@]}")")" "$(bc -l <<<"$(minimum "${cc[@]}") / $(minimum "${bc[@]}")")"

agent_ms=$(bc -l <<<"$PHASES * $AGENT_SLEEP / $PARALLEL * 1000")
printf 'claudopilot / (bare + agent time %.0f ms): wall median %.2fx, min %.2fx (goal #17: 1.5x)\n' "$agent_ms" \
	"$(bc -l <<<"$(median "${cw[@]}") / ($(median "${bw[@]}") + $agent_ms)")" "$(bc -l <<<"$(minimum "${cw[@]}") / ($(minimum "${bw[@]}") + $agent_ms)")"
echo "uptime: $(uptime)"

if [ "$FSYNC" = 1 ]; then
	# fsync-family calls of the whole process tree, one run of each; -y
	# names each call's file, so the journal's share is counted apart.
	fsyncs() { # name, then the command; prints "all journal"
		local name=$1
		shift
		fresh
		(cd "$T/repo" && strace -f -y -o "$T/strace-$name" -e trace=fsync,fdatasync,sync_file_range,sync,syncfs "$@" >"$T/run.log" 2>&1) || { cat "$T/run.log" >&2; exit 1; }
		awk '/(fsync|fdatasync|sync_file_range|sync|syncfs)\(/ && !/resumed>/ { n++; if (/journal\.jsonl>/) j++ } END { print n + 0, j + 0 }' "$T/strace-$name"
	}
	read -r fb _ <<<"$(fsyncs bare "$T/bare.sh" "$PHASES")"
	read -r fc fj <<<"$(fsyncs claudopilot "$T/claudopilot" run --base main --agent "$T/agent.sh" --max-parallel "$PARALLEL" --gate true roadmap/)"
	printf 'fsyncs (strace -f): bare %d (%.1f per phase), claudopilot %d (%.1f per phase), of which the journal %d (%.1f per phase)\n' "$fb" "$(bc -l <<<"$fb / $PHASES")" "$fc" "$(bc -l <<<"$fc / $PHASES")" "$fj" "$(bc -l <<<"$fj / $PHASES")"
fi

[ "$PROFILE" = 1 ] || exit 0

# ---------------------------------------------------------------- profile
# One more run of each with the logging git first on PATH. The shim's own
# bash start is not in the times below (they are git's own), but it slows
# these two runs, so their wall times are not comparable with the table.
profile() { # name, then the command
	local name=$1
	shift
	fresh
	export GITLOG="$T/git-$name.log"
	: >"$GITLOG"
	(cd "$T/repo" && PATH="$T/shim:$PATH" timed "$@") >"$T/wall-$name" || exit 1
}
profile bare "$T/bare.sh" "$PHASES"
profile claudopilot "$T/claudopilot" run --base main --agent "$T/agent.sh" --max-parallel "$PARALLEL" --gate true roadmap/

# Name each call by its subcommand (after -C dir, -c k=v and global flags;
# worktree's own subcommand too) and sum git's time per name.
summarize() {
	awk -F'\t' '
	{
		n = split($4, a, " "); sub_ = ""
		for (i = 1; i <= n; i++) {
			if (a[i] == "-C" || a[i] == "-c") { i++; continue }
			if (a[i] ~ /^--/) continue
			sub_ = a[i]
			if (sub_ == "worktree" && i < n) sub_ = sub_ " " a[i+1]
			break
		}
		cnt[sub_]++; t[sub_] += ($2 - $1) * 1000; total += ($2 - $1) * 1000; calls++
	}
	END {
		for (k in cnt) printf "%s\t%d\t%.0f\n", k, cnt[k], t[k]
		printf "TOTAL\t%d\t%.0f\n", calls, total
	}' "$1"
}
summarize "$T/git-bare.log" | sort >"$T/sum-bare"
summarize "$T/git-claudopilot.log" | sort >"$T/sum-claudopilot"

echo
echo "git calls, profiled run ($PHASES phases; times are git's own, ms):"
printf '%-26s %12s %12s %14s %14s\n' "git subcommand" "bare calls" "bare ms" "claudo calls" "claudo ms"
join -t $'\t' -a1 -a2 -e 0 -o 0,1.2,1.3,2.2,2.3 "$T/sum-bare" "$T/sum-claudopilot" |
	grep -v '^TOTAL' | sort -t $'\t' -k5,5nr |
	awk -F'\t' '{ printf "%-26s %12d %12d %14d %14d\n", $1, $2, $3, $4, $5 }'
join -t $'\t' -a1 -a2 -e 0 -o 0,1.2,1.3,2.2,2.3 "$T/sum-bare" "$T/sum-claudopilot" | grep '^TOTAL' |
	awk -F'\t' '{ printf "%-26s %12d %12d %14d %14d\n", "total", $2, $3, $4, $5 }'
read -r bwall bcpu <"$T/wall-bare"
read -r cwall ccpu <"$T/wall-claudopilot"
printf '%-26s %12.1f %12s %14.1f\n' "calls per phase" "$(bc -l <<<"$(awk -F'\t' '$1=="TOTAL"{print $2}' "$T/sum-bare") / $PHASES")" "" "$(bc -l <<<"$(awk -F'\t' '$1=="TOTAL"{print $2}' "$T/sum-claudopilot") / $PHASES")"
printf '%-26s %12s %12d %14s %14d\n' "wall (with shim)" "" "$bwall" "" "$cwall" "cpu (with shim)" "" "$bcpu" "" "$ccpu"
if [ "$KEEP" = 1 ]; then
	echo "call logs: $T/git-bare.log $T/git-claudopilot.log"
fi
