#!/bin/sh
# UserPromptSubmit: plain stdout on exit 0 is added to what Claude reads.
echo "CTX_PROMPT_PLAIN Release freeze starts Friday."
