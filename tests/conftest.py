"""Loads hookreg's pytest plugin here rather than by entry point, so coverage measures hookreg from its first import."""

pytest_plugins = ["pytester", "hookreg.testing.plugin"]
