#!/bin/sh
# i27-tty.sh: an agent that needs a terminal (issue 27 §2), as Claude
# Code's interactive UI or codex do. It runs only on one; its stdin is the
# terminal, which never ends, so it reads its prompt from
# $CLAUDOPILOT_PROMPT_FILE. It shows the prompt's first line, asks on the
# terminal and says what it was told; told y, it exits 0, else 3.
[ -t 0 ] && [ -t 1 ] || { echo 'not on a terminal'; exit 9; }
[ -s "${CLAUDOPILOT_PROMPT_FILE:-}" ] || { echo 'no prompt file'; exit 8; }
printf 'Task: %s\n' "$(head -n 1 "$CLAUDOPILOT_PROMPT_FILE")"
printf 'Proceed? \033[1m[y/N]\033[0m '
read ans
echo "you said $ans"
[ "$ans" = y ] || exit 3
