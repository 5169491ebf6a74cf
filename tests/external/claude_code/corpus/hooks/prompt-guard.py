#!/usr/bin/env python3
"""UserPromptSubmit: block prompts that carry a secret; otherwise add the sprint goal as context."""

import json
import re
import sys

prompt = json.load(sys.stdin).get("prompt", "")
if re.search(r"(sk-[A-Za-z0-9]{8,}|password\s*=)", prompt):
    print(json.dumps({"decision": "block", "reason": "The prompt contains a secret. Remove it and try again."}))
    sys.exit(0)
context = {"hookEventName": "UserPromptSubmit", "additionalContext": "CTX_PROMPT_JSON Sprint goal: ship the parser."}
print(json.dumps({"hookSpecificOutput": context}))
