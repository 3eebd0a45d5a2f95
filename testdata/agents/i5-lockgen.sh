#!/bin/sh
# i5-lockgen.sh: a LOCKFILE_CMD. Rewrites go.sum (in the current folder)
# from deps/*.dep, sorted, as `go mod tidy` rewrites it from go.mod, and
# appends "<folder name> <go.sum before>" to $LOCKGEN, conflict markers
# counted.
set -eu
: "${LOCKGEN:?LOCKGEN is not set}"
echo "$(basename "$(pwd -P)") markers=$(grep -c '^<<<<<<< ' go.sum || true)" >>"$LOCKGEN"
cat deps/*.dep | LC_ALL=C sort -u >go.sum
