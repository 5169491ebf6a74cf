#!/usr/bin/env python3
"""PreToolUse guard for Read and Bash: .env files hold secrets, so reading them is blocked (exit 2)."""

import json
import re
import sys

data = json.load(sys.stdin)
tool_input = data.get("tool_input", {})
target = tool_input.get("file_path") or tool_input.get("command") or ""
if re.search(r"(^|[\s/])\.env(\.\w+)?\b", target):
    print(f"Blocked: {target!r} touches a .env file, which holds secrets. Use .env.example.", file=sys.stderr)
    sys.exit(2)
sys.exit(0)
