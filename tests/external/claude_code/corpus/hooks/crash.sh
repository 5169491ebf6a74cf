#!/bin/sh
# A guard with a bug: it exits 1 (a non-blocking error in Claude Code).
echo "guard: internal error" >&2
exit 1
