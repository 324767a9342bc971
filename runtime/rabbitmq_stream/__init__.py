"""Sans-I/O client engine of the RabbitMQ stream protocol (PROTOCOL.adoc, "v1").

``ClientConnection`` turns bytes from a broker into events and commands into bytes,
driving the generated machines of ``idl/rabbitmq_stream/v1.yaml`` (connection,
publisher, subscription) for every frame. See ``engine`` for the decisions taken
where the protocol text is silent.
"""

from wirestream.generated.rabbitmq_stream.v1 import (
    CompressionType,
    OffsetSpecFirst,
    OffsetSpecLast,
    OffsetSpecNext,
    OffsetSpecOffset,
    OffsetSpecTimestamp,
    ResponseCode,
)
from wirestream.runtime.rabbitmq_stream.chunk import (
    chunk_records,
    decode_entries,
    encode_entries,
    entries_crc,
    sub_entry_batch,
)
from wirestream.runtime.rabbitmq_stream.engine import (
    DEFAULT_FRAME_MAX,
    DEFAULT_HEARTBEAT,
    DEFAULT_MAX_IN_FLIGHT,
    MAX_OUTSTANDING_CREDIT,
    ClientConnection,
    negotiate,
)
from wirestream.runtime.rabbitmq_stream.credit import CreditOnConsumption
from wirestream.runtime.rabbitmq_stream.features import BrokerFeatures, Feature
from wirestream.runtime.rabbitmq_stream.errors import *  # noqa: F401,F403 - re-exported below
from wirestream.runtime.rabbitmq_stream.errors import __all__ as _errors_all
from wirestream.runtime.rabbitmq_stream.events import *  # noqa: F401,F403 - re-exported below
from wirestream.runtime.rabbitmq_stream.events import __all__ as _events_all

__all__ = [
    "ClientConnection",
    "CreditOnConsumption",
    "BrokerFeatures",
    "Feature",
    "negotiate",
    "chunk_records",
    "decode_entries",
    "encode_entries",
    "entries_crc",
    "sub_entry_batch",
    "DEFAULT_FRAME_MAX",
    "DEFAULT_HEARTBEAT",
    "DEFAULT_MAX_IN_FLIGHT",
    "MAX_OUTSTANDING_CREDIT",
    "CompressionType",
    "OffsetSpecFirst",
    "OffsetSpecLast",
    "OffsetSpecNext",
    "OffsetSpecOffset",
    "OffsetSpecTimestamp",
    "ResponseCode",
    *_errors_all,
    *_events_all,
]
