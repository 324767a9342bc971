"""Hash routing of super streams is the Java client's: MurmurHash3 x86_32, seed 104729,
over the key's UTF-8 bytes, unsigned hash modulo the number of partitions in the
Partitions order. The vectors are the Java client's own tests (HashUtilsTest.java,
HashRoutingStrategyTest.java); the property compares ``mmh3`` with MurmurHash3 written
out from its definition here. Pure computation: well under a second.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from wirestream.runtime.rabbitmq_stream.routing import (
    HASH_SEED,
    hash_partition,
    murmur3,
    partition_index,
)


def reference_murmur3_x86_32(data: bytes, seed: int) -> int:
    """MurmurHash3_x86_32 (Austin Appleby, smhasher MurmurHash3.cpp), line by line."""
    c1, c2, mask = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    h = seed & mask
    blocks = len(data) // 4
    for index in range(blocks):
        k = int.from_bytes(data[4 * index : 4 * index + 4], "little")
        k = rotl((k * c1) & mask, 15) * c2 & mask
        h = (rotl(h ^ k, 13) * 5 + 0xE6546B64) & mask
    tail = data[4 * blocks :]
    if tail:
        k = int.from_bytes(tail, "little")
        h ^= rotl((k * c1) & mask, 15) * c2 & mask
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    return h ^ (h >> 16)


def test_the_hash_is_the_java_clients_on_its_own_vectors() -> None:
    # HashUtilsTest.java: seed 104729 (the routing seed), then seed 42.
    assert HASH_SEED == 104729
    for key, expected in {"hello": 1321743225, "brave": 3825276426,
                          "new": 2970740106, "world": 2453398188}.items():  # fmt: skip
        assert murmur3(key) == expected, key
    for key, expected in {"hello": 3806057185, "brave": 619588758,
                          "new": 1483300585, "world": 1145629360}.items():  # fmt: skip
        assert murmur3(key, 42) == expected, key


def test_a_key_lands_in_the_partition_the_java_client_picks() -> None:
    # HashRoutingStrategyTest.java: partitions invoices-01..03, keys hello1..hello10.
    partitions = ["invoices-01", "invoices-02", "invoices-03"]
    expected = ["02", "01", "02", "03", "01", "03", "01", "02", "01", "03"]
    routed = [hash_partition(f"hello{n}", partitions) for n in range(1, 11)]
    assert routed == [f"invoices-{suffix}" for suffix in expected]


def test_non_ascii_keys_hash_their_utf8_bytes_as_java_does() -> None:
    # Printed by the Java client 1.11.0 (HashUtils.MURMUR3, Integer.toUnsignedString):
    # research notes section 6b.
    assert murmur3("héllo-ünïcode") == 2744218889
    assert murmur3("hello1") == 284792890
    assert murmur3("abc") == 3409700625
    # A lone surrogate cannot be UTF-8: Java's getBytes(UTF_8) writes '?' for it.
    assert murmur3("a\ud800b") == murmur3("a?b")


@given(st.text(max_size=64), st.integers(min_value=0, max_value=2**32 - 1))
def test_the_hash_is_murmur3_x86_32_of_the_utf8_bytes_for_any_key_and_seed(
    key: str, seed: int
) -> None:
    assert murmur3(key, seed) == reference_murmur3_x86_32(key.encode(), seed)


@given(st.text(max_size=32), st.lists(st.text(min_size=1), min_size=1, max_size=40, unique=True))
def test_the_partition_is_the_unsigned_hash_modulo_the_count_in_partitions_order(
    key: str, partitions: list[str]
) -> None:
    index = partition_index(key, len(partitions))
    assert index == reference_murmur3_x86_32(key.encode(), HASH_SEED) % len(partitions)
    assert hash_partition(key, partitions) == partitions[index]
    # Only the count and the order matter, never the partitions' names.
    renamed = [f"p{n}" for n in range(len(partitions))]
    assert hash_partition(key, renamed) == f"p{index}"


def test_a_super_stream_without_partitions_routes_nothing() -> None:
    try:
        partition_index("key", 0)
    except ValueError as error:
        assert "no partition" in str(error)
    else:
        raise AssertionError("partition_index(key, 0) returned")
