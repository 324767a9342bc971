"""The native row conversion gives the pure-Python path's values and errors.

``RowDecoder.decode`` (PostgreSQL DataRow) and ``TextRowDecoder.decode`` (MySQL text
result-set rows) split a row and convert its values in Rust where
``wirestream.runtime._native`` is built (runtime/rust/wirestream-native/src/sql_rows.rs);
``python_decode`` is the reference: the generated decoder and
``wirestream.runtime.rows.convert``. Here both read the same rows -- every DataRow and
text row of the committed fuzz corpora, rows built with values of every kind (good ones
and ones that are not: bad digits, NaN, huge numbers, non-UTF-8, wrong binary widths) --
and thousands of mutations of them (bytes flipped, cut, added; counts and lengths
changed; values swapped for odd text), under every column kind, and must return the same
values (compared by ``repr``: 1 is not True, NaN is NaN) or raise the same exception,
class and message.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import wirestream.generated.mysql.v10 as my
import wirestream.generated.postgresql.v3 as pg
from wirestream.runtime.errors import ProtocolError
from wirestream.runtime.mysql.rows import TextRowDecoder, native_text_row
from wirestream.runtime.postgresql.rows import RowDecoder, native_data_row
from wirestream.runtime.rows import Kind, converter

CORPUS = Path(__file__).resolve().parent.parent / "fuzz" / "corpus"
MUTATIONS = 3_000
ODD = [b"", b"0", b"-0", b"+7", b"12345678901234567890123", b"-99999999999999999999",
       b"1e5", b"1.5E-3", b".5", b"5.", b"1e400", b"NaN", b"nan", b"Infinity", b"-Infinity",
       b"inf", b" 42", b"4_2", b"1_000.5", b"\xd9\xa1\xd9\xa2", b"\xff\xfe", b"t", b"f",
       b"true", b"\x00", b"\x01", b"\x02", b"\x00\x01", b"\x00\x00\x00\x2a", b"abc",
       b"1234.56", b"-0.0", b"e5", b".", b"1e", b"--1", b"+-1", b"0x10", b"9" * 5000,
       "h\u00e9llo".encode(), b"\x7f\xf0\x00\x00\x00\x00\x00\x00"]  # fmt: skip


def outcome(read: Callable[[bytes], Any], data: bytes) -> tuple[str, str]:
    try:
        return "values", repr(read(data))
    except ProtocolError as error:
        return type(error).__name__, str(error)


def kind_rows(count: int, rng: random.Random) -> list[tuple[Kind, ...]]:
    """Column kinds to read a row of ``count`` values with: all of one kind, and mixed."""
    rows = [tuple([k] * count) for k in Kind]
    rows += [tuple(rng.choice(list(Kind)) for _ in range(count)) for _ in range(3)]
    return rows


# ---- PostgreSQL ----


def pg_row(values: list[bytes | None]) -> bytes:
    return pg.encode(pg.DataRow(values=values))


def pg_decoder(kinds: tuple[Kind, ...]) -> RowDecoder:
    decoder = RowDecoder([])
    decoder.kinds, decoder._kinds = kinds, bytes(kinds)
    decoder._convert = converter(kinds, "DataRow")
    return decoder


def pg_corpus() -> Iterator[bytes]:
    for path in sorted((CORPUS / "codec.postgresql.v3").iterdir()):
        data = path.read_bytes()
        for start in range(0, min(len(data), 16)):
            try:
                frame = pg.decode(data[start:], None, "server")
            except (ProtocolError, ValueError, TypeError):
                continue
            if isinstance(frame, pg.DataRow):
                yield data[start:]
                break


def pg_built(rng: random.Random) -> list[bytes]:
    typed = [
        pg_row([b"1048576"]),
        pg_row([b"42", b"alice", b"t"]),
        pg_row([b"9007199254740993", b"42", b"Alice", b"a@b", b"1234.56", b"0.875", b"t", None]),
        pg_row([struct.pack(">h", -2), struct.pack(">i", 7), struct.pack(">q", -(2**63)),
                struct.pack(">f", 0.1), struct.pack(">d", 2.5), b"\x01", b"\x00"]),  # fmt: skip
        pg_row([]),
        pg_row([None, None]),
    ]
    odd = [pg_row([rng.choice(ODD) for _ in range(rng.randrange(1, 5))]) for _ in range(60)]
    return typed + odd + [pg_row([v]) for v in ODD]


def mutated(data: bytes, rng: random.Random, header: int) -> bytes:
    out = bytearray(data)
    how = rng.randrange(6)
    if how == 0 and out:
        for _ in range(rng.randrange(1, 4)):
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    elif how == 1 and out:
        del out[rng.randrange(len(out)) :]
    elif how == 2:
        out += rng.randbytes(rng.randrange(1, 5))
    elif how == 3 and len(out) > header:
        # a byte of the header or the first length changed
        spot = rng.randrange(min(len(out), header + 4))
        out[spot] = rng.choice([0, 1, 0x7F, 0x80, 0xFB, 0xFC, 0xFE, 0xFF, out[spot] + 1 & 0xFF])
    elif how == 4 and len(out) > header:
        out[rng.randrange(header, len(out))] = rng.choice(b"0123456789+-.eEtfx \xff")
    else:
        out = bytearray(rng.randbytes(rng.randrange(0, 24)))
    return bytes(out)


def test_the_extension_converts_rows() -> None:
    # `make test` builds it (make native) first: a missing one is a build failure.
    assert native_data_row is not None, "wirestream.runtime._native is not built: run `make native`"
    assert native_text_row is not None
    decoder = RowDecoder.from_types([20, 25, 16, 1700, 701])
    data = pg_row([b"-5", "\u00e9".encode(), b"f", b"1.50", None])
    assert native_data_row(data, decoder._kinds) == [-5, "\u00e9", False, pg_decimal("1.50"), None]
    assert decoder.decode(data) == decoder.python_decode(data)


def pg_decimal(text: str) -> Any:
    from decimal import Decimal

    return Decimal(text)


def test_the_native_path_never_judges() -> None:
    """A row that is not exactly right comes back None: the Python path raises."""
    assert native_data_row is not None and native_text_row is not None
    two = bytes([Kind.INT, Kind.STR])
    good = pg_row([b"1", b"a"])
    assert native_data_row(good, two) == [1, "a"]
    assert native_data_row(good, two[:1]) is None  # count
    assert native_data_row(good + b"\x00", two) is None  # length
    assert native_data_row(good[:-1], two) is None  # cut
    assert native_data_row(b"C" + good[1:], two) is None  # type byte
    assert native_data_row(pg_row([b"x", b"a"]), two) is None  # not an int
    assert native_data_row(bytearray(good), two) is None  # not bytes
    ctx = my.Context(phase=my.Phase.TEXT_ROWS, column_count=2)
    row = my.encode(my.TextRow(sequence_id=1, values=[b"1", b"a"]), ctx)
    assert native_text_row(row, two) == (1, "a")
    assert native_text_row(row + b"\x00", two) is None
    long = b"\xfc\x01\x00" + row[5:]  # the first length in 3 bytes: not the shortest form
    assert native_text_row(len(long).to_bytes(3, "little") + b"\x01" + long, two) is None


def test_the_environment_switch_forces_the_pure_path() -> None:
    import os
    import subprocess
    import sys

    code = ("from wirestream.runtime.postgresql import rows as p; "
            "from wirestream.runtime.mysql import rows as m; "
            "print(p.native_data_row, m.native_text_row)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "WIRESTREAM_NATIVE": "0"}, check=True)  # fmt: skip
    assert done.stdout.strip() == "None None"


def check_same(decoder: Any, rows: list[bytes]) -> tuple[int, int]:
    """Both paths agree on every row; (rows the native path converted, rows read)."""
    converted = 0
    for data in rows:
        native, python = outcome(decoder.decode, data), outcome(decoder.python_decode, data)
        assert native == python, data
        converted += decoder._native(data, decoder._kinds) is not None
    return converted, len(rows)


def test_postgresql_rows_read_the_same_natively_and_in_python() -> None:
    rng = random.Random(26)
    seeds = list(pg_corpus()) + pg_built(rng)
    assert len(seeds) > 100
    converted = total = 0
    for data in seeds:
        count = pg.decode(data, None, "server").values  # type: ignore[union-attr]
        for kinds in kind_rows(len(count), rng):
            decoder = pg_decoder(kinds)
            rows = [data] + [mutated(data, rng, 7) for _ in range(MUTATIONS // len(seeds))]
            done = check_same(decoder, rows)
            converted, total = converted + done[0], total + done[1]
    # the fast path is taken (most mutations and most kinds make rows no path converts)
    assert converted > 1_000, (converted, total)


def test_postgresql_column_kinds_follow_type_and_format() -> None:
    decoder = RowDecoder([pg.FieldDescription(type_oid=t, format=f) for t, f in
                          [(23, pg.FormatCode.TEXT), (23, pg.FormatCode.BINARY),
                           (1043, pg.FormatCode.BINARY), (114, pg.FormatCode.TEXT),
                           (114, pg.FormatCode.BINARY)]])  # fmt: skip
    assert decoder.kinds == (Kind.INT, Kind.BIN_INT4, Kind.STR, Kind.STR, Kind.BYTES)


# ---- MySQL ----


def my_row(values: list[bytes | None]) -> bytes:
    ctx = my.Context(phase=my.Phase.TEXT_ROWS, column_count=len(values))
    return my.encode(my.TextRow(sequence_id=3, values=values), ctx)


def my_decoder(kinds: tuple[Kind, ...]) -> TextRowDecoder:
    decoder = TextRowDecoder([])
    decoder.kinds, decoder._kinds = kinds, bytes(kinds)
    decoder._ctx = my.Context(phase=my.Phase.TEXT_ROWS, column_count=len(kinds))
    decoder._convert = converter(kinds, "TextRow")
    return decoder


def my_corpus() -> Iterator[tuple[bytes, int]]:
    """Packets of the fuzz corpus that read as text rows of some column count."""
    for path in sorted((CORPUS / "codec.mysql.v10").iterdir()):
        data = path.read_bytes()
        for count in (1, 2, 3, 8):
            ctx = my.Context(phase=my.Phase.TEXT_ROWS, column_count=count)
            try:
                frame = my.decode(data, ctx)
            except (ProtocolError, ValueError, TypeError):
                continue
            if isinstance(frame, my.TextRow):
                yield data, count


def test_mysql_rows_read_the_same_natively_and_in_python() -> None:
    rng = random.Random(10)
    seeds = list(my_corpus())
    built = [[b"1048576"], [b"42", b"alice", b"1"],
             [b"9007199254740993", b"42", b"Alice", b"a@b", b"1234.56", b"0.875", b"1", None],
             [b"x" * 300, b"y" * 70_000], [], [None]]  # fmt: skip
    built += [[rng.choice(ODD) for _ in range(rng.randrange(1, 5))] for _ in range(60)]
    built += [[v] for v in ODD]
    seeds += [(my_row(values), len(values)) for values in built]
    seeds += [(b"\x05\x00\x00\x04\xfe\x00\x00\x02\x00", 1), (b"\x01\x00\x00\x04\xfb", 1),
              (b"\x05\x00\x00\x04\xfc\x02\x00\x34\x32", 1)]  # fmt: skip
    converted = total = 0
    for data, count in seeds:
        for kinds in kind_rows(count, rng):
            decoder = my_decoder(kinds)
            rows = [data] + [mutated(data, rng, 4) for _ in range(MUTATIONS // len(seeds))]
            done = check_same(decoder, rows)
            converted, total = converted + done[0], total + done[1]
    assert converted > 1_000, (converted, total)


def test_mysql_column_kinds_follow_type_and_charset() -> None:
    decoder = TextRowDecoder.from_types(
        [my.ColumnType.LONG, my.ColumnType.NEWDECIMAL, my.ColumnType.BLOB, my.ColumnType.BLOB,
         my.ColumnType.DATETIME, my.ColumnType.LONG],
        [63, 63, 63, 45, 45, 63])  # fmt: skip
    assert decoder.kinds == (Kind.INT, Kind.DECIMAL, Kind.BYTES, Kind.STR, Kind.STR, Kind.INT)


@pytest.mark.parametrize("decoder", [RowDecoder.from_types([23]), TextRowDecoder.from_types([3])])
def test_a_message_that_is_not_a_row_is_a_protocol_error(decoder: Any) -> None:
    other = pg.encode(pg.CommandComplete(tag="SELECT 1")) if isinstance(decoder, RowDecoder) \
        else b"\x01\x00\x00\x04\xfe"  # fmt: skip
    with pytest.raises(ProtocolError, match="expected"):
        decoder.decode(other)
