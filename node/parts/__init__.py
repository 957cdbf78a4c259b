"""What a running node is made of: memory, the P2P network, the market, metrics."""
