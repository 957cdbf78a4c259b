"""How much this node trusts each peer: observed outcomes and attested ratings (the book),
EigenTrust over them, the book's rows in the database, and the peer listing built on them."""
