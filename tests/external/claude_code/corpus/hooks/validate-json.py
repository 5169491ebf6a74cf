#!/usr/bin/env python3
"""PostToolUse validator: a .json file just written must parse; if not, block with the parser's reason."""

import json
import sys

path = json.load(sys.stdin).get("tool_input", {}).get("file_path", "")
if path.endswith(".json"):
    try:
        with open(path, encoding="utf-8") as handle:
            json.load(handle)
    except (OSError, ValueError) as error:
        reason = f"CTX_JSON_INVALID {path.rsplit('/', 1)[-1]} is not valid JSON ({error}). Fix it."
        print(json.dumps({"decision": "block", "reason": reason}))
