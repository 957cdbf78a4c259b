"""The agent's working memory: scratch.md, MEMORY.md and the dream cycle that writes it."""
