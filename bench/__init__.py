"""Benchmarks: `python -m bench [NAME ...] [--quick]` prints one JSON document.

Every figure stands beside a baseline measured in the same run, so the ratio
holds on a noisy machine. Benchmarks never run in the test suite.
"""
