#!/bin/sh
# SessionStart: plain stdout becomes context for the session.
echo "CTX_SESSION_PLAIN Branch policy: work on feature branches."
