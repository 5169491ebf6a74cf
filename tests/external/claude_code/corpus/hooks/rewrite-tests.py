#!/usr/bin/env python3
"""PreToolUse rewrite: run test commands in CI mode (no watch, no colour) by editing the call's input."""

import json
import sys

data = json.load(sys.stdin)
tool_input = data["tool_input"]
command = tool_input.get("command", "")
if command.startswith(("npm test", "pytest")) and "--ci" not in command:
    extra = " -- --ci" if command.startswith("npm") else " -p no:cacheprovider --color=no"
    answer = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "Test runs use CI flags.",
            "updatedInput": {**tool_input, "command": command + extra},
        }
    }
    print(json.dumps(answer))
