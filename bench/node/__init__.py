"""Benchmarks of the node as a user runs it: its processes, their memory and their start-up."""
