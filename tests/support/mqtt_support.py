"""Glue for the MQTT 5 tests that drive the generated codec and machines over real sockets
(tests/mqtt/test_mqtt_broker.py against mosquitto, tests/mqtt/test_mqtt_paho.py against paho-mqtt).

Nothing here knows MQTT beyond what the generated package gives: ``Peer`` passes every
frame it sends through the generated ``ConnectionMachine`` (and, for QoS 2, one
``PublishQos2Machine`` per packet identifier and direction) before ``encode()``, and every
frame it receives comes from ``StreamDecoder`` and goes through the same machines.
``FrameCutter`` cuts each packet's exact bytes out of the received stream (the decoder's
``after_frame`` hook gives each packet's size) and checks byte identity for every one:
``encode(frame) == raw`` and ``encode(decode(raw)) == raw``.

Every socket read has a deadline (``TIMEOUT``): nothing can hang.
"""

from __future__ import annotations

import socket
import time
from collections import deque
from collections.abc import Callable

from wirestream.generated.mqtt.v5 import (
    Frame,
    Pingreq,
    Pingresp,
    Pubcomp,
    Publish,
    Pubrec,
    Pubrel,
    QoS,
    StreamDecoder,
    decode,
    encode,
)
from wirestream.generated.mqtt.v5.machines import (
    ConnectionMachine,
    ConnectionState,
    PublishQos2Machine,
    PublishQos2State,
)
from wirestream.runtime.machine import send_all

__all__ = [
    "TIMEOUT",
    "ConnectionClosed",
    "FrameCutter",
    "Peer",
    "assert_byte_identity",
    "vbi",
]

TIMEOUT = 5.0  # seconds any one wait may take
POLL = 0.01  # seconds of one socket read while a peer in this thread is pumped (paho)


class ConnectionClosed(Exception):
    """The other side closed (or reset) the connection while we waited for a packet."""


def vbi(value: int) -> bytes:
    """A Variable Byte Integer (1.5.5), written here independently of the codec."""
    out = bytearray()
    while True:
        value, digit = divmod(value, 128)
        out.append(digit | (0x80 if value else 0))
        if not value:
            return bytes(out)


def assert_byte_identity(frame: Frame, raw: bytes) -> None:
    """``raw`` is exactly one packet and the codec reproduces it byte for byte."""
    assert encode(frame) == raw, f"encode({frame!r}) = {encode(frame).hex()}, wire {raw.hex()}"
    again = decode(raw)
    assert again == frame, f"decode({raw.hex()}) = {again!r}, the stream decoder gave {frame!r}"
    assert encode(again) == raw


class FrameCutter:
    """A ``StreamDecoder`` that also hands out each packet's bytes, cut from the stream."""

    def __init__(self) -> None:
        self.decoder = StreamDecoder()
        self.decoder.after_frame = self._cut
        self._stream = bytearray()  # what the decoder holds: bytes not yet cut
        self._cuts: list[tuple[Frame, bytes]] = []
        self.checked = 0  # packets whose byte identity was proved

    def _cut(self, frame: Frame, size: int) -> None:
        raw = bytes(self._stream[:size])
        del self._stream[:size]
        self._cuts.append((frame, raw))

    def feed(self, data: bytes) -> list[tuple[Frame, bytes]]:
        self._stream += data
        frames = self.decoder.feed(data)
        cuts, self._cuts = self._cuts, []
        assert [frame for frame, _ in cuts] == frames
        for frame, raw in cuts:
            assert_byte_identity(frame, raw)
            self.checked += 1
        return cuts


class Peer:
    """One side of an MQTT connection driven only by the generated codec and machines.

    ``role`` is the ``ConnectionMachine`` role (client or server). ``idle`` is called
    between short socket reads while waiting (to run paho's loop in this thread).
    """

    def __init__(
        self, sock: socket.socket, role: str, idle: Callable[[], object] | None = None
    ) -> None:
        self.sock = sock
        self.idle = idle
        sock.settimeout(POLL if idle is not None else TIMEOUT)
        self.connection = ConnectionMachine(role)  # type: ignore[arg-type]
        # QoS 2 deliveries by packet identifier: ours (we publish) and theirs
        self.qos2_sending: dict[int, PublishQos2Machine] = {}
        self.qos2_receiving: dict[int, PublishQos2Machine] = {}
        self.cutter = FrameCutter()
        self.pending: deque[tuple[Frame, bytes]] = deque()
        self.received: list[tuple[Frame, bytes]] = []  # every packet received, with its bytes
        self.sent: list[bytes] = []

    # --- machines --------------------------------------------------------------------------

    def _qos2(self, frame: Frame, sending: bool) -> list[PublishQos2Machine]:
        """The QoS 2 machine ``frame`` belongs to (none for other frames)."""
        if isinstance(frame, Publish):
            if frame.qos != QoS.EXACTLY_ONCE:
                return []
            ours = sending
        elif isinstance(frame, Pubrec):
            ours = not sending  # the receiver of the PUBLISH sends PUBREC
        elif isinstance(frame, Pubrel):
            ours = sending
        elif isinstance(frame, Pubcomp):
            ours = not sending
        else:
            return []
        table = self.qos2_sending if ours else self.qos2_receiving
        packet_id = frame.packet_id
        assert packet_id is not None
        machine = table.get(packet_id)
        if machine is None:
            machine = table[packet_id] = PublishQos2Machine("sender" if ours else "receiver")
        return [machine]

    def resume_qos2(self, packet_id: int) -> PublishQos2Machine:
        """A QoS 2 delivery of ours whose first PUBLISH (DUP 0) went out before this
        connection, unacknowledged: 4.4, after a reconnect with a session the sender re-sends
        it with DUP 1 [MQTT-3.3.1-1], and that re-send is the next PUBLISH under
        ``packet_id``. The sender machine starts where that delivery stands: published."""
        assert packet_id not in self.qos2_sending, f"delivery {packet_id} is under way"
        machine = PublishQos2Machine("sender", PublishQos2State.PUBLISHED)
        self.qos2_sending[packet_id] = machine
        return machine

    def _settle(self) -> None:
        for table in (self.qos2_sending, self.qos2_receiving):
            for packet_id in [key for key, machine in table.items() if machine.terminated]:
                del table[packet_id]

    # --- sending ---------------------------------------------------------------------------

    def send(self, frame: Frame) -> bytes:
        """Through the machines (``IllegalSend`` before anything is written), then encode."""
        send_all(frame, self.connection, *self._qos2(frame, sending=True))
        self._settle()
        return self.send_raw(encode(frame))

    def send_raw(self, data: bytes) -> bytes:
        """Bytes past every machine: for what a broken peer would send."""
        self.sock.sendall(data)
        self.sent.append(data)
        return data

    # --- receiving -------------------------------------------------------------------------

    def _read(self, deadline: float) -> bytes:
        while True:
            if self.idle is not None:
                self.idle()
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                if time.monotonic() > deadline:
                    raise
                continue
            except ConnectionResetError:
                return b""
            return data

    def receive_raw(self, timeout: float = TIMEOUT) -> tuple[Frame, bytes]:
        """The next packet and its bytes, past the machines (byte identity checked)."""
        deadline = time.monotonic() + timeout
        while not self.pending:
            try:
                data = self._read(deadline)
            except socket.timeout:
                raise AssertionError(f"no packet in {timeout} s") from None
            if not data:
                raise ConnectionClosed("the peer closed the connection")
            self.pending.extend(self.cutter.feed(data))
        frame, raw = self.pending.popleft()
        self.received.append((frame, raw))
        return frame, raw

    def receive(self, timeout: float = TIMEOUT) -> Frame:
        """The next packet, through the machines (``UnexpectedFrame`` if they refuse it)."""
        frame, _ = self.receive_raw(timeout)
        self.connection.receive(frame)
        for machine in self._qos2(frame, sending=False):
            machine.receive(frame)
        self._settle()
        return frame

    def expect(self, kind: type[Frame], timeout: float = TIMEOUT) -> Frame:
        frame = self.receive(timeout)
        assert isinstance(frame, kind), f"expected {kind.__name__}, got {frame!r}"
        return frame

    def barrier(self) -> list[Frame]:
        """PINGREQ, and every packet received before its PINGRESP (a client's proof that
        nothing else was on its way: the server answers in order)."""
        self.send(Pingreq())
        before = []
        while not isinstance(frame := self.receive(), Pingresp):
            before.append(frame)
        return before

    def wait_closed(self, timeout: float = TIMEOUT) -> None:
        """The peer closes the connection; no packet arrives first."""
        deadline = time.monotonic() + timeout
        while True:
            assert not self.pending, f"expected the connection to close, got {self.pending!r}"
            try:
                data = self._read(deadline)
            except socket.timeout:
                raise AssertionError(f"the connection is still open after {timeout} s") from None
            if not data:
                return
            self.pending.extend(self.cutter.feed(data))

    @property
    def connected(self) -> bool:
        return self.connection.state is ConnectionState.CONNECTED

    def close(self) -> None:
        self.sock.close()
