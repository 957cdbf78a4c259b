"""The market's gossip kinds, each in its own module: listings, revocations, endorsements, bounties."""
