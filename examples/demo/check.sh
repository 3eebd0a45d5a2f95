#!/bin/sh
# The demo's gate: every file the phases wrote must be non-empty.
for f in $(find . -path ./.git -prune -o -type f -name '*.txt' -print); do
  test -s "$f" || { echo "gate: $f is empty"; exit 1; }
done
echo "gate: ok"
