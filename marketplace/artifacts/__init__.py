"""Compiled contracts (ABI + bytecode), built by contracts/compile.py from contracts/*.vy."""
