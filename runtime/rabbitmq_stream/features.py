"""What the broker can do beyond the 3.10 command set, and the one place that says so.

RabbitMQ 3.11 added commands a 3.10 broker answers with "unknown frame" (and a close):
ExchangeCommandVersions, StreamStats, ConsumerUpdate (single active consumer) and
Deliver version 2; 3.13 added Publish version 2 (stream filtering) and the super stream
management commands. A client learns which of them it may use the way the Java client
does (Client.java, ``maybeExchangeCommandVersions``; Utils.java ``is3_11_OrMore``, both
stream-client 1.11.0):

1. the broker's ``version`` server property (PeerProperties) at or above 3.11.0 -- or
   one that holds no ``x.y.z`` at all, which Java treats as "new enough" -- makes the
   client send ExchangeCommandVersions with the server-initiated commands it handles
   (``CLIENT_COMMAND_VERSIONS``: Java's ServerFrameHandler.commandVersions() yields
   exactly Deliver 1..2, the only handlers marked isInitiatedByServer);
2. the broker answers with the client commands it handles and their versions; Java
   derives from that answer: stream stats iff StreamStats (0x001c) is listed, filtering
   iff Publish (0x0002) goes up to version 2, super stream management iff
   CreateSuperStream (0x001d) is listed (Client.java, the constructor after Open).
   Single active consumer and Deliver v2 come with 3.11 itself (the broker switches the
   connection to Deliver v2 because we advertised it): supported iff the exchange was
   answered OK.

``BrokerFeatures.require`` raises ``UnsupportedByBroker`` (naming the feature, the
broker's version and the version that has it) before anything is sent.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from wirestream.runtime.rabbitmq_stream.errors import UnsupportedByBroker

__all__ = [
    "Feature",
    "BrokerFeatures",
    "CLIENT_COMMAND_VERSIONS",
    "wants_command_versions",
    "parse_version",
]

KEY_PUBLISH: Final = 0x0002
KEY_DELIVER: Final = 0x0008
KEY_STREAM_STATS: Final = 0x001C
KEY_CREATE_SUPER_STREAM: Final = 0x001D

CLIENT_COMMAND_VERSIONS: Final[tuple[tuple[int, int, int], ...]] = ((KEY_DELIVER, 1, 2),)
"""(key, min version, max version) of the server-initiated commands this client handles,
as the Java client advertises them: Deliver 1..2 and nothing else (the other handlers
keep the default ``isInitiatedByServer() == false``, ServerFrameHandler.java)."""

_SEMVER: Final = re.compile(r"(\d+)\.(\d+)\.(\d+)")  # Utils.java SEMVER_PATTERN


class Feature(str, enum.Enum):
    """A capability newer than RabbitMQ 3.10. The value is the name ``supports`` takes."""

    STREAM_STATS = "stream_stats"
    DELIVER_V2 = "deliver_v2"
    SINGLE_ACTIVE_CONSUMER = "single_active_consumer"
    FILTERING = "filtering"
    SUPER_STREAM_MANAGEMENT = "super_stream_management"

    @property
    def since(self) -> str:
        """The first RabbitMQ version that has it (rabbit_stream.hrl / command_versions())."""
        return _SINCE[self]

    @property
    def description(self) -> str:
        return _DESCRIPTION[self]


_SINCE: Final = {
    Feature.STREAM_STATS: "3.11.0",
    Feature.DELIVER_V2: "3.11.0",
    Feature.SINGLE_ACTIVE_CONSUMER: "3.11.0",
    Feature.FILTERING: "3.13.0",
    Feature.SUPER_STREAM_MANAGEMENT: "3.13.0",
}
_DESCRIPTION: Final = {
    Feature.STREAM_STATS: "StreamStats",
    Feature.DELIVER_V2: "Deliver version 2 (committed chunk id)",
    Feature.SINGLE_ACTIVE_CONSUMER: "single active consumer (ConsumerUpdate)",
    Feature.FILTERING: "stream filtering (Publish version 2, filter.* subscription properties)",
    Feature.SUPER_STREAM_MANAGEMENT: "super stream management (CreateSuperStream, DeleteSuperStream)",
}


def parse_version(version: str | None) -> tuple[int, int, int] | None:
    """The first ``x.y.z`` in a broker's version string ("3.10.8", "3.13.0-rc.1"), or None."""
    match = _SEMVER.search(version or "")
    if match is None:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def wants_command_versions(version: str | None) -> bool:
    """Whether to send ExchangeCommandVersions: Java's ``is3_11_OrMore`` (a version it
    cannot parse counts as new enough: 'Unable to parse broker version' -> true)."""
    parsed = parse_version(version)
    return parsed is None or parsed >= (3, 11, 0)


@dataclass(frozen=True, slots=True)
class BrokerFeatures:
    """What one connection's broker offers: its ``version`` server property and its
    answer to ExchangeCommandVersions (``commands``: key -> (min, max); empty when the
    exchange did not happen or failed, as Java's empty set)."""

    version: str | None = None
    exchanged: bool = False  # ExchangeCommandVersions answered OK
    commands: Mapping[int, tuple[int, int]] = field(default_factory=dict)

    @staticmethod
    def from_answer(
        version: str | None, commands: Sequence[tuple[int, int, int]]
    ) -> BrokerFeatures:
        return BrokerFeatures(version, True, {key: (low, high) for key, low, high in commands})

    def supports(self, feature: Feature | str) -> bool:
        feature = Feature(feature)
        if not self.exchanged:
            return False
        if feature is Feature.STREAM_STATS:
            return KEY_STREAM_STATS in self.commands
        if feature is Feature.FILTERING:
            return self.commands.get(KEY_PUBLISH, (1, 1))[1] >= 2
        if feature is Feature.SUPER_STREAM_MANAGEMENT:
            return KEY_CREATE_SUPER_STREAM in self.commands
        return True  # DELIVER_V2, SINGLE_ACTIVE_CONSUMER: 3.11 itself

    def require(self, feature: Feature | str) -> None:
        """Raise ``UnsupportedByBroker`` unless the broker offers ``feature``."""
        feature = Feature(feature)
        if self.supports(feature):
            return
        parsed = parse_version(self.version)
        detail = ""
        if parsed is not None and parsed >= parse_version(feature.since):  # type: ignore[operator]
            # e.g. a 3.13 broker with the stream_filtering feature flag disabled
            detail = "its ExchangeCommandVersions answer does not offer it"
        raise UnsupportedByBroker(
            feature.value, feature.description, self.version, feature.since, detail
        )
