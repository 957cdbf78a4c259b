"""The daemon, its CLI, its config and its local API: the only part that knows all the others."""
