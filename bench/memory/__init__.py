"""Benchmarks of what memory does with conversations."""
