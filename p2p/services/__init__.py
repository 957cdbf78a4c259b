"""What a running node's network offers the commands and ``status``: one service each, built by
the P2P part from the pieces it runs (host, trust keeper, weather station)."""
