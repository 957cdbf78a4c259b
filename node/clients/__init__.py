"""How a caller reaches a node: the running daemon's API or control socket."""
