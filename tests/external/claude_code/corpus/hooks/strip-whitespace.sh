#!/bin/sh
# PostToolUse formatter after Edit/Write: strip trailing whitespace from the file just written.
file=$(jq -r '.tool_input.file_path // empty')
[ -n "$file" ] && [ -f "$file" ] || exit 0
sed -i 's/[[:space:]]*$//' "$file"
exit 0
