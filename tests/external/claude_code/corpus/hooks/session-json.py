#!/usr/bin/env python3
"""SessionStart: add project notes as additionalContext."""

import json

notes = "CTX_SESSION_JSON The test command is pytest -q."
print(json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": notes}}))
