"""The graph of crystals: typed links between them (``links``) and what they were derived from and who
touched them (``provenance``). Above the store, which keeps the tables and knows nothing of this."""
