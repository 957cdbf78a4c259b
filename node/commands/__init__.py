"""Every command of the node, defined once: its request model, its handler, its route."""
