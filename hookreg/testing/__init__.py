"""Test helpers for code that uses hookreg: contexts, single-point calls, recording, a pytest plugin."""
