"""Who may read a crystal, what may leave the node, and what peers may put into it."""
