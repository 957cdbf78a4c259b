"""The soak test (issue 48): a real daemon under every kind of load at once, killed and restarted;
``bench.soak.run`` is the benchmark, the other modules its parts."""
