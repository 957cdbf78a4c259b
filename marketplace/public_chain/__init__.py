"""What a node needs on a public chain and not on a development one: named network presets,
confirmations and reorg handling for the events it acts on, and a persisted log cursor."""
