"""The design's numbers (``../shared/seeds``), in one place.

The code's defaults, the config's defaults and the tests read them here: a drift from the design
is one diff in this file, and the tests that check behaviour at these numbers follow it.
"""

from __future__ import annotations

# Graph (seed 003, store.rs): a new memory's nearest neighbours are linked RelatedTo above 0.7 and
# Updates above 0.9.
RELATED_LINK_SIMILARITY = 0.7
UPDATES_LINK_SIMILARITY = 0.9

# Consolidation (seed 000): importance decays at decayRate 5e-10 per ms (a half-life of ~16 days),
# slowed by |valence| x emotionDecayResistance 0.5; below forgetThreshold 0.02 a crystal expires; at
# promoteThreshold 0.7 it is consolidated and a merge candidate; two candidates at mergeOverlapThreshold
# 0.92 merge, and stress raises that to 0.92 + 0.03 x cortisol.
DECAY_RATE_PER_MS = 5e-10
EMOTION_DECAY_RESISTANCE = 0.5
FORGET_THRESHOLD = 0.02
PROMOTE_THRESHOLD = 0.7
MERGE_SIMILARITY = 0.92
MERGE_CORTISOL_SLOPE = 0.03
