#!/usr/bin/env python3
"""PreToolUse policy for Bash, answered in JSON: deny force pushes, ask before network fetches, allow read-only git."""

import json
import re
import sys

command = json.load(sys.stdin).get("tool_input", {}).get("command", "")
rules = [
    (r"git push .*(--force|-f\b)", "deny", "Force pushes rewrite shared history. Push without --force."),
    (r"^(curl|wget)\b", "ask", "Network fetch: a person should approve downloads."),
    (r"^git (status|diff|log)\b", "allow", "Read-only git command."),
]
for pattern, decision, reason in rules:
    if re.search(pattern, command):
        answer = {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": decision,
                "permissionDecisionReason": reason,
            }
        }
        print(json.dumps(answer))
        break
