"""Finding crystals: query building and fusion (pure), and running a search on the store."""
