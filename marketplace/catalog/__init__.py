"""What the network offers and wants: listings and bounties as received (bounded per key and in
total), their word indexes, and the pages `skills list` and `skills bounties` show."""
