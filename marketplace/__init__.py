"""USDC pricing, listings, purchases and delivery of skills."""
