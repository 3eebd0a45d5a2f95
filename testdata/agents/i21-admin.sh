#!/bin/sh
# i21-admin.sh: issue 21 §2's hostile worker. It does its phase's work and
# finishes, leaves a file uncommitted (so the driver's own leftover commit
# runs, outside any sandbox), and plants in its worktree's admin folder
# (.git/worktrees/<id>/, writable in the sandbox) what that commit would
# follow, as PLANT says:
#   reflog-link  logs/HEAD a symbolic link to $TARGET (the user's ~/.bashrc,
#                or the repository's config): git appends a reflog line there
#   index-link   index a symbolic link to $TARGET (missing): git writes the
#                index there
#   hardlink     logs/HEAD a hard link of $TARGET (without the sandbox; in
#                it, a link across mounts fails)
#   fifo         ORIG_HEAD a named pipe, on which a read would block
#   nested       not the admin folder but the checkout: a repository of its
#                own at sub/, registered as a gitlink, whose config has a
#                clean filter that writes $TARGET: git add and git status
#                in the worktree run `git status` in sub/, with its config
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
check_contract
do_work
finish
admin=$(git rev-parse --absolute-git-dir)
case "${PLANT:?PLANT is not set}" in
reflog-link) rm -f "$admin/logs/HEAD" && ln -s "$TARGET" "$admin/logs/HEAD" ;;
index-link) rm -f "$admin/index" && ln -s "$TARGET" "$admin/index" ;;
hardlink) rm -f "$admin/logs/HEAD" && ln "$TARGET" "$admin/logs/HEAD" ;;
fifo) rm -f "$admin/ORIG_HEAD" && mkfifo "$admin/ORIG_HEAD" ;;
nested)
	git init -q sub
	echo data >sub/g
	git -C sub add g && git -C sub commit -qm sub
	echo '* filter=evil' >sub/.gitattributes
	git -C sub config filter.evil.clean "echo ran >>'$TARGET'; cat"
	# Stat-dirty, same content: git status there hashes g again, through
	# the filter.
	touch -d 2000-01-01 sub/g
	git update-index --add --cacheinfo "160000,$(git -C sub rev-parse HEAD),sub"
	git commit -qm "p1: a gitlink"
	;;
*) die "unknown PLANT $PLANT" ;;
esac
echo leftover > leftover.txt
