"""Reliability tests: fault matrix, concurrency, laws, bad inputs, leaks and log hygiene."""
