#!/bin/sh
# The audit plugin's PreToolUse hook: the agent never pushes; a person does.
command=$(jq -r '.tool_input.command // empty')
case "$command" in
  "git push"*) echo "audit plugin: pushing is left to a person (plugin root ${CLAUDE_PLUGIN_ROOT##*/})." >&2; exit 2 ;;
esac
exit 0
