"""Knowledge Crystals: the agent's long-term memory in one SQLite file. Depends on ``crypto`` only."""
