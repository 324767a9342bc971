"""Glue for the MySQL/MariaDB tests that drive the generated codec and machines over real
sockets (tests/mysql/test_mysql_server.py against MariaDB 10.11, tests/mysql/test_mysql_pymysql.py with
PyMySQL 1.2.4 through a proxy of ours).

Nothing here knows the protocol beyond what ``wirestream.generated.mysql.v10`` gives and
what its IDL's header asks of a caller:

* a packet's layout depends on ``ctx.phase``, what its receiver expects next: the member of
  ``Phase`` named after the receiving machine's state (the server's packets decode in the
  client machine's phase, the client's in the server machine's);
* ``track_context`` keeps ``capabilities``, ``column_count`` and ``param_count`` in step:
  it sees every packet of both directions, in the order they crossed the wire
  (``column_count``, from ColumnCount or BinaryColumnCount, is how many values a text row
  has and how long a binary row's NULL bitmap is).

``Conversation`` holds both machines of one connection (a client-role and a server-role
``ConnectionMachine``) and a ``Context`` per direction; every packet, whoever sends it,
passes both machines (``IllegalSend`` / ``UnexpectedFrame`` when one refuses it) and then
both contexts. ``Cutter`` is a ``StreamDecoder`` that cuts each packet's exact bytes out of
the stream (``after_frame`` gives each packet's size) and keeps, with the frame and the raw
bytes, a copy of the context it was decoded in, so that ``check_byte_identity`` can prove
``encode(frame, ctx) == raw`` and ``encode(decode(raw, ctx), ctx) == raw`` for every one.
``Session`` is a client on a socket: ``send`` passes the machines (nothing is written when
one refuses), encodes, and checks that its own bytes decode back in the server's phase.

Every state of the machine names a ``Phase`` (the client's ``switching``, after an
AuthSwitchRequest, included): ``Conversation`` looks the phase up with nothing to fall back
on, so a state without one is a KeyError.

Every socket read has a deadline (``TIMEOUT``): nothing can hang.
"""

from __future__ import annotations

import copy
import hashlib
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from wirestream.generated.mysql.v10 import (
    Context,
    Frame,
    Phase,
    StreamDecoder,
    decode,
    encode,
    track_context,
)
from wirestream.generated.mysql.v10.machines import ConnectionMachine, ConnectionState
from wirestream.runtime.errors import DecodeError

__all__ = [
    "CLIENT_CONNECT_ATTRS",
    "CLIENT_CONNECT_WITH_DB",
    "CLIENT_DEPRECATE_EOF",
    "CLIENT_LONG_FLAG",
    "CLIENT_LONG_PASSWORD",
    "CLIENT_PLUGIN_AUTH",
    "CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA",
    "CLIENT_PROTOCOL_41",
    "CLIENT_SECURE_CONNECTION",
    "CLIENT_SESSION_TRACK",
    "CLIENT_TRANSACTIONS",
    "ConnectionClosed",
    "Conversation",
    "Cutter",
    "Packet",
    "Session",
    "TIMEOUT",
    "UndecodablePacket",
    "check_byte_identity",
    "lenenc_int",
    "native_password",
    "read_lenenc",
]

F = TypeVar("F")

TIMEOUT = 5.0  # seconds any one wait may take

# Protocol::CapabilityFlags, written here independently of the IDL
CLIENT_LONG_PASSWORD = 0x1
CLIENT_LONG_FLAG = 0x4
CLIENT_CONNECT_WITH_DB = 0x8
CLIENT_PROTOCOL_41 = 0x200
CLIENT_TRANSACTIONS = 0x2000
CLIENT_SECURE_CONNECTION = 0x8000
CLIENT_PLUGIN_AUTH = 0x80000
CLIENT_CONNECT_ATTRS = 0x100000
CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA = 0x200000
CLIENT_SESSION_TRACK = 0x800000
CLIENT_DEPRECATE_EOF = 0x1000000


class ConnectionClosed(Exception):
    """The other side closed (or reset) the connection while we waited for a packet."""


class UndecodablePacket(AssertionError):
    """The codec refused a packet a real peer sent (``raw``: its bytes, as far as they
    arrived; ``ctx``: the context it was decoded in; ``error``: the codec's error)."""

    def __init__(self, raw: bytes, ctx: Context, error: DecodeError) -> None:
        super().__init__(
            f"the codec refused a real peer's packet {raw.hex()} in phase "
            f"{_phase_name(ctx.phase)} ({ctx!r}): {type(error).__name__}: {error}"
        )
        self.raw = raw
        self.ctx = ctx
        self.error = error


def _phase_name(value: int) -> str:
    try:
        return Phase(value).name
    except ValueError:
        return str(value)


def native_password(password: bytes, scramble: bytes) -> bytes:
    """mysql_native_password: SHA1(pw) XOR SHA1(scramble + SHA1(SHA1(pw)))."""
    if not password:
        return b""
    h1 = hashlib.sha1(password).digest()
    h2 = hashlib.sha1(h1).digest()
    h3 = hashlib.sha1(scramble + h2).digest()
    return bytes(a ^ b for a, b in zip(h1, h3))


def lenenc_int(value: int) -> bytes:
    """A length-encoded integer in its shortest form (written here, not by the codec)."""
    if value < 0xFB:
        return bytes([value])
    if value < 1 << 16:
        return b"\xfc" + value.to_bytes(2, "little")
    if value < 1 << 24:
        return b"\xfd" + value.to_bytes(3, "little")
    return b"\xfe" + value.to_bytes(8, "little")


def read_lenenc(data: bytes, pos: int) -> tuple[int | None, int]:
    """A length-encoded integer at ``pos`` (None for 0xFB, NULL) and the position after."""
    first = data[pos]
    if first < 0xFB:
        return first, pos + 1
    if first == 0xFB:
        return None, pos + 1
    size = {0xFC: 2, 0xFD: 3, 0xFE: 8}[first]
    return int.from_bytes(data[pos + 1 : pos + 1 + size], "little"), pos + 1 + size


@dataclass(frozen=True)
class Packet:
    """One packet as it crossed the wire: the frame, its exact bytes, a copy of the context
    it was decoded (or encoded) in, and who sent it ("client" or "server")."""

    frame: Frame
    raw: bytes
    ctx: Context
    sender: str


def check_byte_identity(packet: Packet) -> None:
    """``packet.raw`` is exactly one packet and the codec reproduces it byte for byte, in the
    context it was decoded in."""
    frame, raw = packet.frame, packet.raw
    again = decode(raw, copy.copy(packet.ctx))
    assert again == frame, f"decode({raw.hex()}) = {again!r}, the stream gave {frame!r}"
    out = encode(frame, copy.copy(packet.ctx))
    assert out == raw, f"encode({frame!r}) = {out.hex()}, wire {raw.hex()}"
    assert encode(again, copy.copy(packet.ctx)) == raw


class Conversation:
    """Both machines of one connection and the context each direction decodes in.

    ``to_client`` decodes what the server sends (phase: the client machine's state);
    ``to_server`` decodes what the client sends (phase: the server machine's state).
    """

    def __init__(self) -> None:
        self.client = ConnectionMachine("client")
        self.server = ConnectionMachine("server")
        self.to_client = Context()
        self.to_server = Context()
        self._set_phases()

    @staticmethod
    def phase_of(machine: ConnectionMachine) -> Phase:
        """``Phase[machine.state.name.upper()]``, as the IDL's header says."""
        return Phase[machine.state.name.upper()]

    def _set_phases(self) -> None:
        self.to_client.phase = self.phase_of(self.client)
        self.to_server.phase = self.phase_of(self.server)

    def _track(self, frame: Frame) -> None:
        track_context(frame, self.to_client)
        track_context(frame, self.to_server)
        self._set_phases()

    def from_server(self, frame: Frame) -> None:
        """A packet the server sent: the client receives it, the server sent it."""
        self.client.receive(frame)
        self.server.send(frame)
        self._track(frame)

    def from_client(self, frame: Frame) -> None:
        """A packet the client sent: the client sent it, the server receives it."""
        self.client.send(frame)
        self.server.receive(frame)
        self._track(frame)

    @property
    def closed(self) -> bool:
        return self.client.state is ConnectionState.CLOSED


class Cutter:
    """A ``StreamDecoder`` for one direction that hands out each packet with its bytes and
    the context it was decoded in; ``on_frame`` runs after each packet and before the next
    is decoded (to move the machines and the phase)."""

    def __init__(self, ctx: Context, sender: str, on_frame: Callable[[Frame], None]) -> None:
        self.ctx = ctx
        self.sender = sender
        self.on_frame = on_frame
        self.decoder = StreamDecoder(ctx=ctx)
        self.decoder.after_frame = self._cut
        self._stream = bytearray()  # bytes not yet cut
        self._cuts: list[Packet] = []
        self.bytes = 0  # bytes cut into packets so far

    def _cut(self, frame: Frame, size: int) -> None:
        raw = bytes(self._stream[:size])
        del self._stream[:size]
        self._cuts.append(Packet(frame, raw, copy.copy(self.ctx), self.sender))
        self.bytes += size
        self.on_frame(frame)

    @property
    def buffered(self) -> bytes:
        """Bytes received that are not a whole packet yet."""
        return bytes(self._stream)

    def feed(self, data: bytes) -> list[Packet]:
        """The packets ``data`` completes; ``UndecodablePacket`` when the codec refuses one."""
        self._stream += data
        try:
            frames = self.decoder.feed(data)
        except DecodeError as error:
            head = bytes(self._stream)
            if len(head) >= 4:
                head = head[: 4 + int.from_bytes(head[:3], "little")]
            raise UndecodablePacket(head, copy.copy(self.ctx), error) from error
        cuts, self._cuts = self._cuts, []
        assert [packet.frame for packet in cuts] == frames
        return cuts


class Session:
    """A client on ``sock`` driven only by the generated codec and machines.

    Every packet received is checked for byte identity; every packet sent is checked to
    decode back to itself in the server machine's phase. ``packets`` holds both ways.
    """

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        sock.settimeout(TIMEOUT)
        self.conversation = Conversation()
        self.cutter = Cutter(self.conversation.to_client, "server", self.conversation.from_server)
        self.pending: deque[Packet] = deque()
        self.packets: list[Packet] = []  # every packet, both ways, in wire order
        self.raw_received = bytearray()  # the server's whole byte stream

    @property
    def machine(self) -> ConnectionMachine:
        return self.conversation.client

    @property
    def state(self) -> ConnectionState:
        return self.conversation.client.state

    # --- sending -----------------------------------------------------------------------------

    def send(self, frame: Frame) -> Packet:
        """Through both machines (``IllegalSend`` before anything is written), then encode
        in the context the server decodes it in, then write."""
        ctx = copy.copy(self.conversation.to_server)
        self.conversation.from_client(frame)
        raw = encode(frame, copy.copy(ctx))
        packet = Packet(frame, raw, ctx, "client")
        check_byte_identity(packet)
        self.packets.append(packet)
        self.sock.sendall(raw)
        return packet

    def send_raw(self, data: bytes) -> None:
        """Bytes past every machine: for what a broken client would send."""
        self.sock.sendall(data)

    # --- receiving ---------------------------------------------------------------------------

    def _read(self, deadline: float) -> bytes:
        self.sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            raise AssertionError(f"nothing from the server in {TIMEOUT} s") from None
        except ConnectionResetError:
            return b""
        self.raw_received += data
        return data

    def receive_packet(self, timeout: float = TIMEOUT) -> Packet:
        """The next packet from the server (through the machines, byte identity checked)."""
        deadline = time.monotonic() + timeout
        while not self.pending:
            data = self._read(deadline)
            if not data:
                raise ConnectionClosed(
                    f"the server closed the connection ({len(self.cutter.buffered)} bytes "
                    f"of an unfinished packet: {self.cutter.buffered.hex()})"
                )
            for packet in self.cutter.feed(data):
                check_byte_identity(packet)
                self.pending.append(packet)
                self.packets.append(packet)
        return self.pending.popleft()

    def receive(self, timeout: float = TIMEOUT) -> Frame:
        return self.receive_packet(timeout).frame

    def expect(self, kind: type[F], timeout: float = TIMEOUT) -> F:
        frame = self.receive(timeout)
        assert isinstance(frame, kind), f"expected {kind.__name__}, got {frame!r}"
        return frame

    def response(self, timeout: float = TIMEOUT) -> list[Frame]:
        """Every packet up to the end of the pending command's response (the client machine
        back in ``ready``, or ``closed``)."""
        # the machines move as packets are decoded, so several may have moved them at once:
        # the response ends when none is left unread and the machine is done with it
        frames = [self.receive(timeout)]
        while self.pending or self.state not in (ConnectionState.READY, ConnectionState.CLOSED):
            frames.append(self.receive(timeout))
        return frames

    def command(self, frame: Frame) -> list[Frame]:
        """Send a command and read its whole response."""
        self.send(frame)
        return self.response()

    def wait_closed(self, timeout: float = TIMEOUT) -> None:
        """The server closes the connection; no packet arrives first."""
        deadline = time.monotonic() + timeout
        while True:
            assert not self.pending, f"expected the connection to close, got {self.pending!r}"
            data = self._read(deadline)
            if not data:
                assert not self.cutter.buffered, self.cutter.buffered.hex()
                return
            for packet in self.cutter.feed(data):
                check_byte_identity(packet)
                self.pending.append(packet)
                self.packets.append(packet)

    def close(self) -> None:
        self.sock.close()
