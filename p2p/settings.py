"""The P2P package's tables of the config file: ``[p2p]``, ``[trust]`` and ``[wire]``.

Each table is the union of the settings of the components it configures (``ground.settings``):
the node hands ``config.p2p`` itself to the host, the penalty box, discovery, the weather askers
and the validator, ``config.trust`` to the trust book, and ``config.wire`` to the validator.
What is left here is what no one component owns, and the checks that span components.

Each component's settings live in a light module that imports pydantic and little else, because
every CLI command reads the config (``tests/p2p/test_settings.py``): ``p2p.network.settings``,
``p2p.network.bounds``, ``p2p.penalties``, ``p2p.trust.limits`` and ``p2p.trust.floors``. The
validator's two (``EnvelopeBounds``, ``GossipRates``) and the weather askers' are here, as the
validator and the askers import the kinds, the trust book and the crypto; and the package root must
not import ``p2p.weather``, which imports the root (``tests/test_import_cycles.py``).
"""

from __future__ import annotations

from typing import Self

from pydantic import Field, field_validator, model_validator

from crypto.anchors import parse_public_key
from ground.rates import RateLimit
from ground.settings import Section, SettingError
from p2p.network.settings import DiscoverySettings, HostSettings
from p2p.penalties import PenaltySettings
from p2p.trust.floors import TrustFloors
from p2p.trust.limits import TrustLimits

#: A management node's fastest weather renewal: twice the receivers' weather rate (1 a second,
#: ``p2p.validation.WEATHER_RATE``).
MIN_WEATHER_RENEW_S = 2.0


#: The burst of the strangers' shared bounty rate (``GossipRates.strangers_bounty_rate``).
STRANGERS_BOUNTY_BURST = 10


class EnvelopeBounds(Section):
    """What an envelope may be: its size, how old or how far ahead its timestamp, and how many
    (author, nonce) pairs the replay guard remembers (each of its two memories)."""

    max_envelope_bytes: int = Field(default=65_536, ge=1_024, le=1_048_576)
    """Largest signed envelope accepted from the network, in bytes. [1024, 1048576]."""
    max_age_s: int = Field(default=300, ge=1, le=86_400)
    """Oldest accepted envelope timestamp, in seconds before now. [1, 86400]."""
    max_ahead_s: int = Field(default=60, ge=0, le=3_600)
    """Furthest accepted envelope timestamp, in seconds after now (clock skew). [0, 3600]."""
    replay_cache_entries: int = Field(default=100_000, ge=1_000, le=10_000_000)
    """How many (author, nonce) pairs the replay guard remembers. [1000, 10000000]."""

    @property
    def max_age_ms(self) -> int:
        return self.max_age_s * 1000

    @property
    def max_ahead_ms(self) -> int:
        return self.max_ahead_s * 1000


class GossipRates(Section):
    """How fast gossip is taken in: skill listings per author, and from every author without
    standing (provisional or untrusted) as one crowd, since fresh keys are free and per-author rates
    alone do not bound strangers; bounties from that crowd likewise."""

    skill_rate_per_s: float = Field(default=5.0, gt=0, le=1_000)
    """Skills a single author may publish per second (sustained) and in a burst; more is dropped
    (not forwarded; the peer that relayed it is not penalised: the rate is this node's own).
    """
    skill_burst: int = Field(default=20, ge=1, le=10_000)
    strangers_skill_rate_per_s: float = Field(default=20.0, gt=0, le=10_000)
    """Skills per second (sustained) and in a burst that all authors without standing (provisional
    or untrusted keys) may publish together: new keys cost nothing, so strangers share one budget.
    """
    strangers_skill_burst: int = Field(default=100, ge=1, le=100_000)
    strangers_bounty_rate_per_s: float = Field(default=1.0, gt=0, le=1_000)
    """Bounties per second that all authors without standing may publish together."""

    @property
    def skill_rate(self) -> RateLimit:
        return RateLimit(self.skill_rate_per_s, self.skill_burst)

    @property
    def strangers_skill_rate(self) -> RateLimit:
        return RateLimit(self.strangers_skill_rate_per_s, self.strangers_skill_burst)

    @property
    def strangers_bounty_rate(self) -> RateLimit:
        return RateLimit(self.strangers_bounty_rate_per_s, STRANGERS_BOUNTY_BURST)


class AskSettings(Section):
    """Before obeying the first weather of an issuer in a run, a node asks the issuer (if connected)
    and this many other peers for the newest it holds, waiting this long for each answer; it answers
    one asker at most this often (burst ``p2p.weather.ask.ANSWER_BURST``; past it the stream is
    reset)."""

    weather_ask_peers: int = Field(default=3, ge=0, le=32)
    """Before it obeys the first weather of an issuer in a run (new, or just restarted), a node asks the
    issuer (if connected) and this many other connected peers for the newest signed weather they hold,
    and obeys the newest sequence learnt (p2p.weather.confirm). [0, 32].
    """
    weather_ask_timeout_s: float = Field(default=5.0, gt=0, le=60)
    """Seconds it waits for each answer; if no answer in time holds a newer weather, it obeys the held
    one (issued in the last 10 s, or it would not have been forwarded). (0, 60].
    """
    weather_answers_per_peer_per_s: float = Field(default=1.0, gt=0, le=100)
    """Answers per second it gives one asker (burst 5); past it the asker's stream is reset. (0, 100]."""


class P2PSettings(HostSettings, PenaltySettings, DiscoverySettings, AskSettings, GossipRates):
    """The ``[p2p]`` table."""

    enabled: bool = True
    """Join the libp2p network (gossip of skills, weather and trust). false: a memory-only node."""
    attestation_interval_min: float = Field(default=5.0, gt=0, le=1_440)
    """Minutes between this node's signed trust attestations (the input of EigenTrust)."""
    # A management node announces its weather again this often while it lasts (p2p.weather), so that a
    # node that missed the one broadcast or joined after it obeys it from then on; 0: never. Not under
    # MIN_WEATHER_RENEW_S: faster would run into the receivers' weather rate and cost the manager points.
    weather_renew_s: float = Field(default=30.0, ge=0, le=86_400)
    """Seconds between a management node's renewals of its weather while it lasts: the same level,
    reason and end under a fresh sequence, so that a node that missed the one broadcast (or joined
    after it) obeys it from then on. Nodes that obey it already change nothing. 0: never;
    else at least 2 (nodes take weather from one key at 1 a second).
    """
    peer_content_per_author: int = Field(default=200, ge=1, le=1_000_000)
    """Quotas on skills peers gossip into this memory: crystals and bytes of text, per author and
    for all peers together. Past one, crystals are deleted for good: the least trusted author's
    oldest first (within an author's own quota, its oldest). Bought skills and what you approved
    out of quarantine are neither counted nor deleted.
    """
    peer_content_bytes_per_author: int = Field(default=2 * 1024 * 1024, ge=32_768, le=2**40)
    peer_content_total: int = Field(default=20_000, ge=1, le=10_000_000)
    peer_content_bytes_total: int = Field(default=64 * 1024 * 1024, ge=32_768, le=2**40)
    listings_per_seller: int = Field(default=100, ge=1, le=100_000)
    """Listings and bounties other nodes publish, kept per key and in total (your own are not
    counted); past one, the least trusted key's oldest go first. This bounds the disk they use
    and the work of `skills list`, `skills bounties` and pricing.
    """
    listings_total: int = Field(default=5_000, ge=1, le=1_000_000)
    bounties_per_author: int = Field(default=20, ge=1, le=100_000)
    bounties_total: int = Field(default=2_000, ge=1, le=1_000_000)
    trust_file: str = Field(default="p2p/trust.json", min_length=1)
    """Where releases before the trust book moved into the database kept it (observed peer outcomes and
    received attestations); imported at the first start, then kept as trust.json.imported.
    """
    peers_file: str = Field(default="p2p/peers.json", min_length=1)
    """Where the peers this node knows are kept across restarts (only addresses a handshake proved)."""

    @model_validator(mode="after")
    def _weather_renewal_within_rate(self) -> Self:
        if 0 < self.weather_renew_s < MIN_WEATHER_RENEW_S:
            raise SettingError(
                f"weather_renew_s is 0 (never) or at least {MIN_WEATHER_RENEW_S} s: nodes take weather from one "
                "key at 1 a second, and a key past that pays penalty points"
            )
        return self


class TrustSettings(TrustLimits, TrustFloors):
    """The ``[trust]`` table: the management keys, the trust book's limits and floors, and one rule."""

    management_keys: list[str] = Field(default_factory=list)
    """Public keys (64 hex digits, as `bitterbot-node status` prints them) of the
    management nodes this node trusts to sign weather events and skill endorsements.
    """
    # Release content held only for its author's standing once the author becomes trusted. Off by
    # default: held content waits for the person, or for this rule if the person sets it.
    release_held_on_trust: bool = False
    """Release content held only for its author's standing when the author becomes trusted. Off:
    held content waits for the person (`memory quarantine approve`, the dashboard).
    """

    @field_validator("management_keys")
    @classmethod
    def _keys_are_ed25519(cls, keys: list[str]) -> list[str]:
        for key in keys:
            parse_public_key(key)
        return keys


class WireSettings(EnvelopeBounds):
    """The ``[wire]`` table: what an envelope may be (``p2p.validation``)."""
