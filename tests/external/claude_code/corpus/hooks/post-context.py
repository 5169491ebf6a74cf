#!/usr/bin/env python3
"""PostToolUse: after a Bash call, remind Claude of the project's conventions through additionalContext."""

import json

answer = {
    "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "CTX_POST_JSON Logs go to build/."}
}
print(json.dumps(answer))
