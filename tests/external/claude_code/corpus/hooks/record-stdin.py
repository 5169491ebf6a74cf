#!/usr/bin/env python3
"""Append the JSON this hook was sent, with its label, cwd and Claude variables, to the file $HOOK_LOG names."""

import json
import os
import sys

label = sys.argv[1] if len(sys.argv) > 1 else "record"
entry = {
    "label": label,
    "stdin": json.load(sys.stdin),
    "cwd": os.getcwd(),
    "env": {name: os.environ.get(name) for name in ("CLAUDE_PROJECT_DIR", "CLAUDE_PLUGIN_ROOT")},
}
with open(os.environ["HOOK_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps(entry) + "\n")
