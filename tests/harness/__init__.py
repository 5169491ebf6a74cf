"""Tests of hookreg.harness, the reference agent loop."""
