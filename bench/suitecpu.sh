#!/usr/bin/env bash
# suitecpu.sh: the README's `go test ./...` as a new user runs it (a fresh
# clone of HEAD, the build cache warmed first), with the wall and CPU of the
# whole run and of each package's test binary, its git children included
# (issue 23; BENCHMARKS.md section 5). Usage: bench/suitecpu.sh [OUT_DIR]
set -euo pipefail
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
out=${1:-$(mktemp -d)}
mkdir -p "$out"
clone="$out/clone"
rm -rf "$clone"
git clone -q "$repo" "$clone"
# Around each test binary: its wall, user and sys seconds (children it
# waited for included) and its folder, one line per binary.
cat > "$out/wrap.sh" <<'WRAP'
#!/bin/sh
exec /usr/bin/time -f "%e %U %S $PWD" -a -o "$SUITECPU_OUT" "$@"
WRAP
chmod +x "$out/wrap.sh"
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 SUITECPU_OUT="$out/packages.txt"
rm -f "$SUITECPU_OUT"
cd "$clone"
go test -count=1 -run XXX_NONE ./... > "$out/warm.txt" 2>&1
echo "load before: $(cat /proc/loadavg)" > "$out/summary.txt"
rc=0
/usr/bin/time -f "whole run: %e s wall, %U s user, %S s sys" -o "$out/time.txt" \
	go test -count=1 -exec "$out/wrap.sh" -json ./... > "$out/test.json" 2>&1 || rc=$?
{
	echo "load after: $(cat /proc/loadavg)"
	echo "commit: $(git rev-parse --short HEAD), go test exit $rc"
	cat "$out/time.txt"
	echo "per test binary: wall, user, sys, cpu (s)"
	sort -k2 -nr "$SUITECPU_OUT" | awk -v c="$clone" '{sub(c, ".", $4); printf "%7.1f %7.1f %7.1f %7.1f %s\n", $1, $2, $3, $2 + $3, $4}'
} >> "$out/summary.txt"
cat "$out/summary.txt"
exit "$rc"
