"""Benchmarks of the network: gossip, trust, envelope checks and floods from strangers."""
