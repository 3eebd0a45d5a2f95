#!/bin/sh
# A hostile agent without the sandbox (the stray-write watch's tests): it
# does its work in its own worktree ($MINE) and also writes outside it, in
# every way the watch must see: new files and folders in the base checkout
# ($TOP) and in a worktree waiting to land ($IDLE), a tracked file changed,
# a link out of the tree and a write through it ($OUTSIDE), a file in
# another running attempt's worktree ($BUSY: its own agent's business) and
# an ignored build file (git does not list it). $N tells the attempts
# apart.
set -e
cd "$MINE"
echo work > "work-$N"
echo stray > "$TOP/stray-$N"
mkdir -p "$TOP/deep-$N/a/b"
echo stray > "$TOP/deep-$N/a/b/file"
echo stray > "$IDLE/stray-$N"
mkdir "$IDLE/new-$N"
echo stray > "$IDLE/new-$N/file"
echo theirs >> "$BUSY/theirs-$N"
echo build > "$TOP/build/out-$N"
ln -s "$OUTSIDE" "$TOP/link-$N"
echo outside > "$TOP/link-$N/via-link-$N"
echo "changed by $N" >> "$TOP/f"
