"""The libp2p host, gossip topics, validators, trust and reputation."""
