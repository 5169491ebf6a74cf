#!/bin/sh
# PreToolUse on git commit (the config's "if" filter picks the calls): the message must name a ticket.
command=$(jq -r '.tool_input.command // empty')
if ! printf '%s' "$command" | grep -Eq '[A-Z]+-[0-9]+'; then
  echo "Commit messages must name a ticket, like ABC-123." >&2
  exit 2
fi
exit 0
