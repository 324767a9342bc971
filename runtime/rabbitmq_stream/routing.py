"""Which partition of a super stream a message goes to: the Java client's routing.

A super stream is an exchange whose bindings lead to its partition streams. A producer
picks the partition itself, one of two ways, both as RabbitMQ's Java client does so
that both clients put a given key in the same partition:

- **hash** (the Java client's default, StreamProducerBuilder.java:280,289):
  MurmurHash3 x86_32 with seed 104729 over the routing key's UTF-8 bytes
  (HashUtils.java:34,79); the partition is the unsigned hash modulo the number of
  partitions, indexing the list the Partitions command answered, in its order
  (HashRoutingStrategy.java:44 ``Integer.remainderUnsigned``). The broker orders that
  list by the bindings' ``x-stream-partition-order`` argument (rabbit_stream_manager.erl
  super_stream_partitions). The Go client does the same (super_stream_producer.go:33-64).
- **key** (RoutingKeyRoutingStrategy.java:24-41): the broker's Route command says which
  partitions the key is bound to (direct exchange: zero, one or several); the answer is
  cached forever per key.

A key that is not valid Unicode (a lone surrogate) is hashed with '?' in its place, the
bytes Java's ``String.getBytes(UTF_8)`` gives it. The hash is ``mmh3`` (a maintained C extension; the research's pure-Python port gave the
same values at 3 us a key against mmh3's 0.07 us, and a producer hashes every message).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import mmh3

__all__ = ["HASH_SEED", "murmur3", "partition_index", "hash_partition"]

HASH_SEED: Final = 104729
"""HashUtils.java:34 ``MURMUR3 = new Murmur3(104729)`` (GO super_stream_producer.go: SEED)."""


def murmur3(routing_key: str, seed: int = HASH_SEED) -> int:
    """MurmurHash3 x86_32 of the key's UTF-8 bytes, as an unsigned 32-bit int (Java's
    ``HashUtils.MURMUR3.applyAsInt`` read with ``Integer.toUnsignedLong``)."""
    return mmh3.hash(routing_key.encode("utf-8", "replace"), seed, signed=False)


def partition_index(routing_key: str, partitions: int) -> int:
    """The index of the key's partition among ``partitions`` (HashRoutingStrategy.java:44)."""
    if partitions < 1:
        raise ValueError("a super stream with no partition routes nothing")
    return mmh3.hash(routing_key.encode("utf-8", "replace"), HASH_SEED, signed=False) % partitions


def hash_partition(routing_key: str, partitions: Sequence[str]) -> str:
    """The partition stream the key hashes to, ``partitions`` in the Partitions order."""
    return partitions[partition_index(routing_key, len(partitions))]
