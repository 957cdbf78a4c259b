"""The gossip topics. The version is part of the name: a new wire format gets a new topic."""

from __future__ import annotations

SKILLS_TOPIC = "bitterbot/skills/1"  # skill listings, new versions, revocations
WEATHER_TOPIC = "bitterbot/weather/1"  # signed cortisol weather from management nodes
TRUST_TOPIC = "bitterbot/trust/1"  # signed trust attestations, the input of EigenTrust
BOUNTIES_TOPIC = "bitterbot/bounties/1"  # signed requests for a skill, with a USDC reward
