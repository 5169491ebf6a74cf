#!/usr/bin/env python3
"""Stop: keep Claude going, once, until the transcript shows a pytest run."""

import json
import sys

data = json.load(sys.stdin)
if data.get("stop_hook_active"):
    sys.exit(0)  # already continued once: let it stop
ran_tests = False
path = data.get("transcript_path")
if path:
    with open(path, encoding="utf-8") as transcript:
        for line in transcript:
            entry = json.loads(line)
            content = (entry.get("message") or {}).get("content")
            for part in content if isinstance(content, list) else []:
                if part.get("type") == "tool_use" and "pytest" in str(part.get("input", {}).get("command", "")):
                    ran_tests = True
if not ran_tests:
    print(json.dumps({"decision": "block", "reason": "CTX_STOP_FEEDBACK Run pytest before you finish."}))
