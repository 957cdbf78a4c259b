"""How nodes reach each other: finding peers from one address, crossing NATs through relays, and the
bounds on what any remote peer may hold of this node."""
