"""The `bitterbot-node` command line: one module per command group."""
