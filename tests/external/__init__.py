"""Tests of hookreg.external: Claude Code and Recursive hook configs run as real processes."""
