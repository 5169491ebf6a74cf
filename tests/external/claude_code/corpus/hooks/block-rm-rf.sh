#!/bin/sh
# PreToolUse guard: refuse recursive force deletes. Exit 2 blocks the call; stderr tells Claude why.
command=$(jq -r '.tool_input.command // empty')
case "$command" in
  *"rm -rf"* | *"rm -fr"*)
    echo "Blocked: '$command' deletes recursively. Remove the files you mean by name." >&2
    exit 2
    ;;
esac
exit 0
