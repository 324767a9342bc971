"""BPMUX engine: one test per rule of seed 002 (shared/seeds/002_faf2c3df31445caf.txt),
quoted by line, plus the decisions the engine takes where the seed is silent.

The peer is played by hand: packets built with the generated codec and fed to
``receive_data``, so invalid sequences can be sent too.
"""

from __future__ import annotations

import pytest

from wirestream.generated.bpmux.rel import (
    CancelAll,
    Close,
    CreateDuplex,
    CreateSink,
    CreateStream,
    Frame,
    GreedyDuplex,
    GreedySink,
    InnerCancel,
    InnerCredit,
    InnerEnd,
    InnerError,
    InnerItem,
    InnerItems,
    MainCredit,
    Message,
    Messages,
    Minimum,
    Request,
    RequestCancel,
    Requests,
    Response,
    ResponseError,
    StreamDecoder,
    UnknownFrame,
)
from wirestream.generated.bpmux.rel.machines import ConnectionMachine, ConnectionState
from wirestream.runtime.bpmux import (
    BpmuxConnection,
    ConnectionDone,
    ConnectionClosedError,
    ConnectionEnded,
    CreditExceeded,
    GreedyNotEnabled,
    InnerAborted,
    InnerCancelled,
    InnerCreditReceived,
    InnerEnded,
    InnerErrored,
    InnerKind,
    InnerOpened,
    InvalidInnerId,
    ItemReceived,
    MainCreditReceived,
    BpmuxMessageReceived,
    MinimumReceived,
    PeerClosed,
    RequestAborted,
    RequestCancelled,
    BpmuxRequestReceived,
    ResponseErrorReceived,
    ResponseReceived,
)
from wirestream.runtime.errors import (
    DemandExceeded,
    FrameTooLarge,
    IllegalSend,
    LocalProtocolError,
    NonCanonical,
    PeerExceededDemand,
    RemoteProtocolError,
    UnexpectedFrame,
)
from wirestream.runtime.machine import IGNORE

OPENING: list[Frame] = [
    Message(b"m"),
    Messages([b"m", b"n"]),
    Request(0, b"q"),
    Requests(0, [b"q"]),
    CreateStream(0, 10, b"s"),
    CreateSink(0, b"s"),
    GreedySink(0, b"s", [b"i"]),
    CreateDuplex(0, 10, b"d"),
    GreedyDuplex(0, 10, b"d", [b"i"]),
]


def engine(*, credit: int = 1000, initiator: bool = True, **options: object) -> BpmuxConnection:
    """An engine whose start-up output is drained and that the peer gave ``credit``
    top-level bytes (0: none).  It is the initiator: it creates odd inner ids, the
    hand-played peer even ones."""
    conn = BpmuxConnection(initiator=initiator, **options)  # type: ignore[arg-type]
    conn.data_to_send()
    if credit:
        conn.receive_data(MainCredit(credit).to_bytes())
    return conn


def feed(conn: BpmuxConnection, *frames: Frame) -> list[object]:
    return list(conn.receive_data(b"".join(frame.to_bytes() for frame in frames)))


def sent(conn: BpmuxConnection) -> list[object]:
    return list(StreamDecoder().feed(conn.data_to_send()))


def size(frame: Frame) -> int:
    return len(frame.to_bytes())


# --- Infodump -----------------------------------------------------------------------


def test_nothing_sent_without_credit() -> None:
    """L4: "Everything involves backpressure, data can only be transmitted once the
    receiver has signaled that it wants to receive data." """
    conn = engine(credit=0)
    with pytest.raises(CreditExceeded) as caught:
        conn.send_message(b"hello")
    assert isinstance(caught.value, DemandExceeded) and caught.value.level == "top-level"
    with pytest.raises(CreditExceeded):
        conn.open_stream(b"s", credit=10)
    assert sent(conn) == []
    feed(conn, MainCredit(100))
    sink = conn.open_sink(b"sink")
    with pytest.raises(CreditExceeded) as inner:
        conn.send_item(sink, b"item")
    assert inner.value.level == "inner"


def test_top_level_events_delivered_in_send_order() -> None:
    """L16: "Top-level packets are guaranteed to be delivered in the order in which they
    were sent." Events come in packet order, batch entries in their order."""
    conn = engine()
    events = feed(conn, Message(b"1"), Request(0, b"2"), Messages([b"3", b"4"]),
                  CreateSink(0, b"5"), Requests(1, [b"6", b"7"]), Message(b"8"))  # fmt: skip
    payloads = [getattr(e, "payload") for e in events if hasattr(e, "payload")]
    assert payloads == [b"1", b"2", b"3", b"4", b"5", b"6", b"7", b"8"]


def test_top_level_credit_charged_whole_packet_bytes() -> None:
    """L17: "Unless indicated otherwise, sending a message consumes top-level credit (1
    credit per byte sent, including metadata)." DECISION: the whole packet."""
    receiver = engine(auto_credit=False, initial_credit=100)
    feed(receiver, Message(b"abc"))
    assert receiver.peer_top_level_credit == 100 - 5  # type byte + VarU64 length + 3
    sender = engine(credit=100)
    sender.send_request(b"abc")
    assert sender.top_level_credit == 100 - size(Request(0, b"abc")) == 94
    sender.data_to_send()
    assert sender.top_level_credit == 94


def test_credit_counts_type_byte_and_varu64s() -> None:
    """L17 "including metadata" (ambiguity B1): the type byte and every VarU64 count; a
    300-byte payload has a 3-byte VarU64 length (f9 01 2c)."""
    sender = engine(credit=1000)
    sender.send_message(bytes(300))
    assert sender.top_level_credit == 1000 - (1 + 3 + 300)
    receiver = engine(auto_credit=False, initial_credit=1000)
    feed(receiver, CreateStream(0, 70000, bytes(300)))
    assert receiver.peer_top_level_credit == 1000 - (1 + 1 + 4 + 3 + 300)


def test_top_level_packet_beyond_credit_is_protocol_error() -> None:
    """L17: the top-level credit bounds what the peer may send; going over it is fatal
    (DECISION, BP-30: there is no error packet, "TODO: close top-level with error")."""
    conn = engine(auto_credit=False, initial_credit=10)
    with pytest.raises(PeerExceededDemand) as caught:
        feed(conn, Message(b"12345"), Message(b"67890"))
    assert isinstance(caught.value, RemoteProtocolError)
    assert BpmuxMessageReceived(b"12345") in caught.value.events
    assert caught.value.events[-1] == ConnectionEnded(False, str(caught.value))


def test_unknown_packet_skipped_and_stream_continues() -> None:
    """L19: "When receiving a packet of unknown first byte, treat the next byte(s) as a
    VarU64 and drop that many bytes after that VarU64, then continue the stream." """
    conn = engine()
    data = UnknownFrame(0x63, b"future").to_bytes() + Message(b"after").to_bytes()
    assert conn.receive_data(data[:4]) == []
    assert conn.receive_data(data[4:]) == [BpmuxMessageReceived(b"after")]
    assert conn.unknown_packets_skipped == 1


def test_unknown_packet_not_charged_to_credit() -> None:
    """L19 says nothing about credit for skipped packets. DECISION (B4): not charged, so
    a newer peer that exempts its new packets never looks like an overrun."""
    conn = engine(auto_credit=False, initial_credit=10)
    feed(conn, UnknownFrame(200, bytes(50)))
    assert conn.peer_top_level_credit == 10


def test_greedy_packets_need_peer_support() -> None:
    """L19: "If any new packets are added ... they will include VarU64 indicating the
    remaining packet length directly after the first type." GreedySink/GreedyDuplex (our
    layout, TODO L24-26) have no such length, so a seed-only peer could not skip them:
    the engine sends them only with greedy=True."""
    conn = engine()
    with pytest.raises(GreedyNotEnabled) as caught:
        conn.open_sink(b"s", items=[b"a"])
    assert isinstance(caught.value, LocalProtocolError)
    with pytest.raises(GreedyNotEnabled):
        conn.open_duplex(b"d", credit=5, items=[b"a"])
    assert sent(conn) == []
    greedy = engine(greedy=True)
    greedy.open_sink(b"s", items=[b"a"])
    assert sent(greedy) == [GreedySink(1, b"s", [b"a"])]


# --- Top Level Packets ----------------------------------------------------------------


def test_main_credit_adds_top_level_credit() -> None:
    """L29: "Allow the peer to send `credit` more bytes of top-level packets"."""
    conn = engine(credit=0)
    assert feed(conn, MainCredit(10), MainCredit(5)) == [MainCreditReceived(10),
                                                         MainCreditReceived(5)]  # fmt: skip
    assert conn.top_level_credit == 15
    conn.grant(40)
    assert sent(conn) == [MainCredit(40)]
    assert conn.peer_top_level_credit == (1 << 16) + 40


def test_main_credit_grants_saturate_at_varu64_max() -> None:
    """L29 with a VarU64 credit: DECISION, grants add up to 2^64-1 and stay there."""
    conn = engine(credit=0)
    feed(conn, MainCredit((1 << 64) - 1), MainCredit(10))
    assert conn.top_level_credit == (1 << 64) - 1


def test_main_credit_is_free() -> None:
    """L29: MainCredit "(does not consume credit)": it is sent and received with no
    top-level credit at all."""
    conn = engine(credit=0, auto_credit=False, initial_credit=0)
    conn.grant(7)
    assert sent(conn) == [MainCredit(7)]
    assert conn.top_level_credit == 0
    feed(conn, MainCredit(3))
    assert conn.top_level_credit == 3


def test_engine_sends_initial_main_credit() -> None:
    """TODO L27 "handshaking (give initial top-level credit, specify min-credit)":
    DECISION (BP-29): each engine's first packet is MainCredit(initial_credit)."""
    conn = BpmuxConnection(initiator=False, initial_credit=4096)
    assert sent(conn) == [MainCredit(4096)]
    assert conn.peer_top_level_credit == 4096 and conn.top_level_credit == 0


def test_top_level_packet_before_any_main_credit_is_protocol_error() -> None:
    """BP-29: a side starts with no credit for the peer, so a Message before our first
    MainCredit overruns it."""
    conn = BpmuxConnection(initiator=False, initial_credit=0)
    with pytest.raises(PeerExceededDemand):
        feed(conn, Message(b"too early"))


def test_no_opening_packets_after_close_sent() -> None:
    """L31: "Indicate that no more Message, Request, OpenStream, OpenSink, OpenDuplex
    packets will be sent" -- the engine refuses them after send_close()."""
    conn = engine()
    conn.send_close()
    assert conn.state is ConnectionState.LOCAL_CLOSED
    for command in (lambda: conn.send_message(b"m"), lambda: conn.send_request(b"q"),
                    lambda: conn.open_stream(b"s", 1), lambda: conn.open_sink(b"s"),
                    lambda: conn.open_duplex(b"d", 1)):  # fmt: skip
        with pytest.raises(IllegalSend) as caught:
            command()
        assert "L31" in caught.value.spec
    with pytest.raises(IllegalSend):
        conn.send_close()
    assert sent(conn) == [Close()]
    assert conn.top_level_credit == 1000  # nothing reserved by the refused commands


@pytest.mark.parametrize("frame", OPENING, ids=lambda f: type(f).__name__)
def test_opening_packet_after_peer_close_is_protocol_error(frame: Frame) -> None:
    """L31: after the peer's Close, its Message/Request/Create* packets (and their batch
    and greedy forms) break the `connection` machine."""
    conn = engine(initiator=True)
    assert feed(conn, Close()) == [PeerClosed()]
    with pytest.raises(UnexpectedFrame) as caught:
        feed(conn, frame)
    assert caught.value.machine == "connection"


def test_repeated_close_from_peer_is_ignored() -> None:
    """L31 (DECISION): a second Close says nothing new and is dropped."""
    conn = engine()
    assert feed(conn, Close(), Close()) == [PeerClosed()]


def test_replies_and_inner_traffic_continue_after_close() -> None:
    """L31 lists only Message, Request and Open* packets: replies, credit, cancels and
    inner packets still go both ways after Close."""
    conn = engine()
    stream = conn.open_stream(b"s", credit=100)
    feed(conn, Request(0, b"q"), CreateStream(0, 100, b"t"))
    conn.send_close()
    feed(conn, Close())
    assert conn.state is ConnectionState.BOTH_CLOSED
    conn.respond(0, b"a")
    conn.send_item(0, b"x")
    conn.grant_inner(stream, 10)
    conn.grant(10)
    conn.end_items(0)
    assert feed(conn, InnerItem(stream, b"y"), InnerEnd(stream), MainCredit(1)) == [
        ItemReceived(stream, b"y"), InnerEnded(stream), MainCreditReceived(1),
        ConnectionDone()]  # fmt: skip


def test_minimum_recorded() -> None:
    """L33: "Indicate the lowest credit at which you can still fully function." """
    conn = engine(auto_credit=False)
    assert feed(conn, Minimum(500)) == [MinimumReceived(500)]
    assert conn.peer_minimum == 500


def test_minimum_costs_top_level_credit_and_waits_for_it() -> None:
    """L33 has no "(does not consume credit)", so the L17 default applies (B2): the
    engine sends its Minimum once the peer's MainCredit covers it."""
    conn = BpmuxConnection(initiator=True, minimum=300)
    assert sent(conn) == [MainCredit(1 << 16)]
    feed(conn, MainCredit(10))
    assert sent(conn) == [Minimum(300)]
    assert conn.top_level_credit == 10 - size(Minimum(300))
    receiver = engine(auto_credit=False, initial_credit=2)
    with pytest.raises(PeerExceededDemand):
        feed(receiver, Minimum(300))


def test_main_credit_topped_up_to_peer_minimum() -> None:
    """L33 + BP-09: with auto_credit the engine keeps the peer's credit at its Minimum
    (as far as its own initial_credit goes)."""
    conn = BpmuxConnection(initiator=True, initial_credit=1000)
    conn.data_to_send()
    feed(conn, MainCredit(10), Minimum(900))
    feed(conn, Message(bytes(200)))
    assert conn.peer_top_level_credit >= 900
    grants = [f for f in sent(conn) if isinstance(f, MainCredit)]
    assert grants and sum(g.credit for g in grants) == conn.peer_top_level_credit - (
        1000 - size(Minimum(900)) - size(Message(bytes(200))))  # fmt: skip


def test_cancel_all_received_cancels_every_request_and_flow_we_serve() -> None:
    """L35: "The same as sending RequestCancel and InnerCancel messages for all requests,
    streams and duplexes (does not consume credit)" -- received: every request we are
    answering and every flow we send items on (DECISION, BP-10: our sinks too, as the
    peer receives on them) is cancelled."""
    conn = engine(auto_credit=False)
    feed(conn, Request(0, b"a"), Request(1, b"b"), CreateStream(0, 50, b"s"),
         CreateDuplex(2, 50, b"d"), CreateSink(4, b"k"))  # fmt: skip
    mine = conn.open_sink(b"mine")
    credit = conn.peer_top_level_credit
    events = feed(conn, CancelAll())
    assert events == [RequestCancelled(0), RequestCancelled(1), InnerCancelled(0),
                      InnerCancelled(mine), InnerCancelled(2)]  # fmt: skip
    assert conn.peer_top_level_credit == credit  # free
    with pytest.raises(IllegalSend):
        conn.respond(0, b"late")
    with pytest.raises(IllegalSend):
        conn.send_item(2, b"x")
    with pytest.raises(IllegalSend):
        conn.send_item(mine, b"x")
    conn.grant_inner(4, 10)  # the flows we receive on are not the peer's to cancel
    conn.grant_inner(2, 10)


def test_message_delivered_once_no_reply() -> None:
    """L37: "Send a message to the peer (one-shot, unidirectional)" -- one event, and
    nothing is sent back (credit grants aside)."""
    conn = engine(auto_credit=False)
    assert feed(conn, Message(b"hi")) == [BpmuxMessageReceived(b"hi")]
    assert sent(conn) == []


def test_messages_batch_delivers_each_payload() -> None:
    """L39: "The same as sending multiple messages." One event per entry; the credit
    charged is the one batch packet (DECISION)."""
    conn = engine(auto_credit=False, initial_credit=100)
    batch = Messages([b"a", b"", b"ccc"])
    assert feed(conn, batch) == [BpmuxMessageReceived(b"a"), BpmuxMessageReceived(b""),
                                 BpmuxMessageReceived(b"ccc")]  # fmt: skip
    assert conn.peer_top_level_credit == 100 - size(batch)
    assert feed(conn, Messages([])) == []  # B6: an empty batch is legal and costs its header


def test_request_answered_exactly_once() -> None:
    """L41: "Send a request to the peer (one-shot, receive a single response)": a second
    answer for the same id is not delivered (it meets the spent id's `closed` row)."""
    conn = engine()
    req_id = conn.send_request(b"q")
    assert feed(conn, Response(req_id, b"a")) == [ResponseReceived(req_id, b"a")]
    assert feed(conn, ResponseError(req_id, b"again")) == []
    assert conn.open_requests() == ([], [])


def test_duplicate_outstanding_req_id_is_protocol_error() -> None:
    """L41/L43 (DECISION: ids increase, never reused): a Request reusing a pending id
    breaks the `request` machine."""
    conn = engine()
    feed(conn, Request(0, b"a"))
    with pytest.raises(UnexpectedFrame) as caught:
        feed(conn, Request(0, b"b"))
    assert caught.value.machine == "request" and caught.value.state == "pending"


def test_reused_answered_req_id_is_protocol_error() -> None:
    """DECISION: req_ids increase; an id below the highest one seen is spent."""
    conn = engine()
    feed(conn, Request(5, b"a"))
    conn.respond(5, b"done")
    with pytest.raises(UnexpectedFrame) as caught:
        feed(conn, Request(3, b"b"))
    assert caught.value.state == "closed"


def test_requests_batch_assigns_consecutive_ids() -> None:
    """L43: "The reqests are assigned consecutive ids, starting from `initial_req_id`." """
    conn = engine()
    assert feed(conn, Requests(7, [b"a", b"b", b"c"])) == [
        BpmuxRequestReceived(7, b"a"), BpmuxRequestReceived(8, b"b"), BpmuxRequestReceived(9, b"c")]  # fmt: skip
    conn.respond(8, b"eight")
    assert sent(conn) == [Response(8, b"eight")]
    assert conn.open_requests() == ([], [7, 9])


def test_requests_batch_id_collision_is_protocol_error() -> None:
    """L43: a batch whose consecutive ids hit a pending request is refused."""
    conn = engine()
    feed(conn, Request(8, b"x"))
    with pytest.raises(UnexpectedFrame):
        feed(conn, Requests(7, [b"a", b"b"]))


def test_response_after_request_cancel_is_dropped() -> None:
    """L45: "Indicate that you are no longer interested in the response to a request of
    a certain id": the answer crossing our RequestCancel is dropped."""
    conn = engine()
    req_id = conn.send_request(b"q")
    conn.cancel_request(req_id)
    assert sent(conn) == [Request(req_id, b"q"), RequestCancel(req_id)]
    assert feed(conn, Response(req_id, b"late")) == []
    with pytest.raises(IllegalSend):
        conn.cancel_request(req_id)


def test_request_cancel_is_free() -> None:
    """L45: RequestCancel "(does not consume credit)", either way."""
    conn = engine(credit=100, auto_credit=False, initial_credit=100)
    req_id = conn.send_request(b"q")
    before = conn.top_level_credit
    conn.cancel_request(req_id)
    assert conn.top_level_credit == before
    feed(conn, Request(0, b"x"))
    peer_before = conn.peer_top_level_credit
    assert feed(conn, RequestCancel(0)) == [RequestCancelled(0)]
    assert conn.peer_top_level_credit == peer_before


def test_request_cancel_crossing_our_answer_is_ignored() -> None:
    """L45 (race): the peer's RequestCancel for a request we already answered is dropped;
    one for a request it never sent is an error."""
    conn = engine()
    feed(conn, Request(0, b"q"))
    conn.respond(0, b"a")
    assert feed(conn, RequestCancel(0)) == []
    with pytest.raises(UnexpectedFrame):
        feed(conn, RequestCancel(9))


def test_response_is_free() -> None:
    """L47: Response "(does not consume credit)": answered with no top-level credit."""
    conn = engine(credit=0, auto_credit=False, initial_credit=100)
    feed(conn, Request(0, b"q"))
    conn.respond(0, bytes(500))
    assert sent(conn) == [Response(0, bytes(500))]
    other = engine(credit=100)
    req_id = other.send_request(b"q")
    feed(other, Response(req_id, bytes(5000)))  # not charged to the peer either


def test_response_for_unknown_req_id_is_protocol_error() -> None:
    """L47: "Send the response to a previously received request" -- an answer to a
    request we never sent breaks the `request` machine; so does answering one we never
    got."""
    conn = engine()
    with pytest.raises(UnexpectedFrame) as caught:
        feed(conn, Response(3, b"?"))
    assert "never sent" in str(caught.value)
    with pytest.raises(IllegalSend):
        engine().respond(0, b"?")


def test_response_error_ends_request() -> None:
    """L49: "Answer a previously received request with an error" -- it ends the request
    like a Response."""
    conn = engine()
    req_id = conn.send_request(b"q")
    assert feed(conn, ResponseError(req_id, b"no")) == [ResponseErrorReceived(req_id, b"no")]
    with pytest.raises(IllegalSend):
        conn.cancel_request(req_id)
    server = engine()
    feed(server, Request(0, b"q"))
    server.respond_error(0, b"no")
    with pytest.raises(IllegalSend) as caught:
        server.respond(0, b"twice")
    assert "answered already" in str(caught.value)


def test_response_error_does_not_consume_credit() -> None:
    """L49: ResponseError "(does not consume credit)": we answer with an error when the
    peer left us no top-level credit, and the peer's error costs it none of ours."""
    conn = engine(credit=0, auto_credit=False, initial_credit=100)
    feed(conn, Request(0, b"q"))
    conn.respond_error(0, bytes(500))
    assert sent(conn) == [ResponseError(0, bytes(500))]
    assert conn.top_level_credit == 0
    other = engine(credit=100, auto_credit=False, initial_credit=100)
    req_id = other.send_request(b"q")
    before = other.peer_top_level_credit
    # 5000 bytes against the 100 we granted: charged, it would be an overrun
    assert feed(other, ResponseError(req_id, bytes(5000))) == [
        ResponseErrorReceived(req_id, bytes(5000))
    ]
    assert other.peer_top_level_credit == before


def test_create_stream_grants_initial_inner_credit() -> None:
    """L51: "Create a stream from the peer, with initial credit" -- we send items on it
    within that credit."""
    conn = engine()
    assert feed(conn, CreateStream(0, 50, b"s")) == [
        InnerOpened(0, InnerKind.STREAM, b"s", we_send=True, we_receive=False, credit=50)
    ]
    assert conn.inner_credit(0) == 50
    mine = conn.open_stream(b"t", credit=70)
    assert conn.peer_inner_credit(mine) == 70 and conn.inner_credit(mine) == 0


def test_items_from_stream_creator_are_protocol_error() -> None:
    """L51: on a stream only the peer of the creator sends items: items from the
    creator break the `flow` machine (there is no item_receiver flow for them)."""
    conn = engine()
    feed(conn, CreateStream(0, 50, b"s"))
    with pytest.raises(UnexpectedFrame) as caught:
        feed(conn, InnerItem(0, b"x"))
    assert caught.value.machine == "flow"


def test_sink_items_wait_for_inner_credit() -> None:
    """L53: "Create a sink to the peer" -- no credit field, so the creator's items wait
    for the peer's InnerCredit."""
    conn = engine()
    sink = conn.open_sink(b"k")
    with pytest.raises(CreditExceeded):
        conn.send_item(sink, b"item")
    feed(conn, InnerCredit(sink, conn.item_cost(sink, b"item")))
    conn.send_item(sink, b"item")
    assert sent(conn)[-1] == InnerItem(sink, b"item")


def test_create_duplex_opens_two_flows() -> None:
    """L55: "Create a duplex with the peer, with initial credit for the stream half"."""
    conn = engine()
    duplex = conn.open_duplex(b"d", credit=30)
    assert conn.peer_inner_credit(duplex) == 30 and conn.inner_credit(duplex) == 0
    feed(conn, InnerCredit(duplex, 40), InnerItem(duplex, b"in"))
    conn.send_item(duplex, b"out")
    assert feed(conn, CreateDuplex(0, 9, b"e")) == [
        InnerOpened(0, InnerKind.DUPLEX, b"e", we_send=True, we_receive=True, credit=9)
    ]


def test_inner_ids_partitioned_by_parity() -> None:
    """Inner packets carry only the id, so both sides' ids share one space. DECISION:
    the initiator creates odd ids, the acceptor even ones; a Create of our parity is a
    protocol error."""
    initiator = engine(initiator=True)
    acceptor = engine(initiator=False)
    assert [initiator.open_sink(), initiator.open_stream(), initiator.open_duplex()] == [1, 3, 5]
    assert [acceptor.open_sink(), acceptor.open_stream()] == [0, 2]
    with pytest.raises(InvalidInnerId):
        feed(initiator, CreateSink(7, b""))
    with pytest.raises(InvalidInnerId):
        feed(engine(initiator=False), CreateStream(4, 1, b""))


def test_create_with_open_inner_id_is_protocol_error() -> None:
    """An inner id is one stream: creating it again (open or spent) is refused."""
    conn = engine()
    feed(conn, CreateSink(2, b"a"))
    with pytest.raises(UnexpectedFrame):
        feed(conn, CreateStream(2, 1, b"b"))
    spent = engine()
    feed(spent, CreateSink(4, b"a"))
    spent.grant_inner(4, 2)
    feed(spent, InnerEnd(4))
    with pytest.raises(UnexpectedFrame):
        feed(spent, CreateStream(4, 1, b"again"))
    older = engine()
    feed(older, CreateSink(6, b"a"))
    with pytest.raises(UnexpectedFrame):
        feed(older, CreateSink(2, b"below the highest id"))


def test_packets_for_closed_inner_id_ignored() -> None:
    """Late packets for an ended flow are dropped: InnerCredit/InnerCancel crossing our
    InnerEnd (L59/L61), and that holds after the id is forgotten (ended_memory=0)."""
    for memory in (1024, 0):
        conn = engine(ended_memory=memory)
        feed(conn, CreateStream(0, 50, b"s"))
        conn.end_items(0)
        assert feed(conn, InnerCredit(0, 10), InnerCancel(0)) == []
        assert conn.open_inner_ids() == []


def test_inner_packets_charge_inner_not_top_level_credit() -> None:
    """L58: "These consume inner credit, not top-level credit." """
    conn = engine(credit=100, auto_credit=False, initial_credit=100)
    stream = conn.open_stream(b"", credit=50)
    top_sent, top_peer = conn.top_level_credit, conn.peer_top_level_credit
    feed(conn, InnerItem(stream, b"abc"))
    assert conn.peer_top_level_credit == top_peer
    assert conn.peer_inner_credit(stream) == 50 - size(InnerItem(stream, b"abc"))
    feed(conn, CreateStream(0, 50, b""))
    conn.send_item(0, b"xyz")
    conn.data_to_send()
    assert conn.top_level_credit == top_sent
    assert conn.inner_credit(0) == 50 - size(InnerItem(0, b"xyz"))


def test_inner_credit_adds_peer_inner_credit() -> None:
    """L59: "Allow the peer to send `credit` more bytes of stream-level packets (does not
    consume credit)"."""
    conn = engine(auto_credit=False)
    stream = conn.open_stream(b"", credit=5)
    before = conn.peer_top_level_credit
    conn.grant_inner(stream, 20)
    assert sent(conn)[-1] == InnerCredit(stream, 20)
    assert conn.peer_inner_credit(stream) == 25
    feed(conn, CreateStream(0, 0, b""))
    assert feed(conn, InnerCredit(0, 7)) == [InnerCreditReceived(0, 7)]
    assert conn.inner_credit(0) == 7
    assert conn.peer_top_level_credit == before - size(CreateStream(0, 0, b""))


def test_inner_credit_from_item_sender_is_protocol_error() -> None:
    """L59: only the side receiving the items grants inner credit: InnerCredit on a
    stream we receive breaks the `flow` machine."""
    conn = engine()
    stream = conn.open_stream(b"", credit=5)
    with pytest.raises(UnexpectedFrame):
        feed(conn, InnerCredit(stream, 10))
    with pytest.raises(IllegalSend):
        engine().grant_inner(engine().open_sink(), 10)


def test_items_after_inner_cancel_are_dropped() -> None:
    """L61: "Indicate that you are no longer interested in more items over a stream":
    items (and the end) already in flight are dropped, not charged, not errors."""
    conn = engine()
    stream = conn.open_stream(b"", credit=50)
    conn.cancel_inner(stream)
    assert sent(conn)[-1] == InnerCancel(stream)
    assert feed(conn, InnerItem(stream, b"x"), InnerItems(stream, [b"y"]), InnerEnd(stream)) == []
    with pytest.raises(IllegalSend):
        conn.grant_inner(stream, 10)


def test_inner_cancel_stops_item_sender() -> None:
    """L61: after the peer's InnerCancel we send nothing more on the flow (DECISION: no
    InnerEnd owed), and items still queued are not sent."""
    conn = engine()
    feed(conn, CreateStream(0, 100, b""))
    conn.send_item(0, b"queued")
    assert feed(conn, InnerCancel(0)) == [InnerCancelled(0)]
    assert sent(conn) == []
    with pytest.raises(IllegalSend) as caught:
        conn.send_item(0, b"more")
    assert "cancelled" in str(caught.value)
    with pytest.raises(IllegalSend):
        conn.end_items(0)


def test_inner_cancel_does_not_consume_credit() -> None:
    """L61: InnerCancel "(does not consume credit)": it leaves at once when the peer left
    us no top-level credit, and the peer's, arriving when it has spent all the credit we
    gave it, is no overrun."""
    opening = CreateStream(1, 50, b"")
    conn = engine(credit=size(opening), auto_credit=False, initial_credit=size(opening))
    stream = conn.open_stream(b"", credit=50)
    assert sent(conn) == [opening] and conn.top_level_credit == 0
    conn.cancel_inner(stream)
    assert sent(conn) == [InnerCancel(stream)]
    # the peer spends every byte we granted on opening a stream from us, then cancels it
    feed(conn, CreateStream(0, 50, b""))
    assert conn.peer_top_level_credit == 0
    assert feed(conn, InnerCancel(0)) == [InnerCancelled(0)]
    assert conn.peer_top_level_credit == 0


def test_inner_item_beyond_inner_credit_is_protocol_error() -> None:
    """L63 + L58: an item beyond the inner credit we granted is fatal (BP-30)."""
    conn = engine()
    stream = conn.open_stream(b"", credit=5)
    feed(conn, InnerItem(stream, b"ab"))  # 1 + 1 + 1 + 2 = 5
    with pytest.raises(PeerExceededDemand) as caught:
        feed(conn, InnerItem(stream, b""))
    assert InnerAborted(stream) in caught.value.events


def test_inner_items_batch_delivers_each_item() -> None:
    """L65: "Send multiple items over a stream." One event per item; charged the batch
    packet."""
    conn = engine()
    stream = conn.open_stream(b"", credit=100)
    batch = InnerItems(stream, [b"a", b"bb", b""])
    assert feed(conn, batch) == [ItemReceived(stream, b"a"), ItemReceived(stream, b"bb"),
                                 ItemReceived(stream, b"")]  # fmt: skip
    assert conn.peer_inner_credit(stream) == 100 - size(batch)


def test_items_after_inner_end_are_protocol_error() -> None:
    """L67: "Signal that no more items will be sent over a stream"."""
    conn = engine()
    stream = conn.open_stream(b"", credit=100)
    assert feed(conn, InnerEnd(stream)) == [InnerEnded(stream)]
    with pytest.raises(UnexpectedFrame) as caught:
        feed(conn, InnerItem(stream, b"late"))
    assert "L67" in caught.value.spec
    sender = engine()
    feed(sender, CreateStream(0, 100, b""))
    sender.end_items(0)
    with pytest.raises(IllegalSend):
        sender.send_item(0, b"late")


def test_inner_end_charged_to_inner_credit() -> None:
    """L58 covers InnerEnd (no exemption, B3): it costs inner credit, so send_item keeps
    its cost back and the stream can always be ended."""
    conn = engine()
    end = size(InnerEnd(0))
    item = size(InnerItem(0, b"abc"))
    feed(conn, CreateStream(0, item, b""))
    with pytest.raises(CreditExceeded):
        conn.send_item(0, b"abc")  # would leave nothing for the InnerEnd
    feed(conn, InnerCredit(0, end))
    conn.send_item(0, b"abc")
    conn.end_items(0)
    assert sent(conn) == [InnerItem(0, b"abc"), InnerEnd(0)]
    receiver = engine()
    stream = receiver.open_stream(b"", credit=1)
    with pytest.raises(PeerExceededDemand):
        feed(receiver, InnerEnd(stream))  # 2 bytes > 1


def test_inner_error_ends_flow_with_payload() -> None:
    """L69: "Signal an error over a stream (same as InnerEnd, but with a payload)"."""
    conn = engine()
    stream = conn.open_stream(b"", credit=100)
    assert feed(conn, InnerError(stream, b"boom")) == [InnerErrored(stream, b"boom")]
    with pytest.raises(UnexpectedFrame):
        feed(conn, InnerEnd(stream))
    sender = engine()
    feed(sender, CreateStream(0, 100, b""))
    sender.fail_items(0, b"oops")
    assert sent(sender) == [InnerError(0, b"oops")]
    assert sender.open_inner_ids() == []


def test_greedy_sink_items_delivered_and_paid_with_top_level_credit() -> None:
    """TODO L24-26 (our GreedySink/GreedyDuplex layout): the attached items arrive
    right after the open event, paid with top-level credit; the new flow's inner credit
    is untouched (B5); every item is accepted (no "accepted" reply packet exists)."""
    conn = engine(auto_credit=False, initial_credit=100)
    packet = GreedyDuplex(0, 10, b"d", [b"a", b"b"])
    assert feed(conn, packet) == [
        InnerOpened(0, InnerKind.DUPLEX, b"d", we_send=True, we_receive=True, credit=10,
                    greedy=True),
        ItemReceived(0, b"a"), ItemReceived(0, b"b")]  # fmt: skip
    assert conn.peer_top_level_credit == 100 - size(packet)
    assert conn.peer_inner_credit(0) == 0
    sender = engine(greedy=True, credit=100)
    sender.open_sink(b"s", items=[bytes(10)])
    assert sender.top_level_credit == 100 - size(GreedySink(1, b"s", [bytes(10)]))
    assert sender.inner_credit(1) == 0


# --- decisions: errors, EOF, limits -----------------------------------------------------


def test_protocol_error_closes_transport() -> None:
    """BP-30 (DECISION; TODO L21 "close top-level with error"): a peer violation fails
    the connection: nothing more is sent, commands are refused, later bytes ignored."""
    conn = engine()
    conn.send_message(b"queued")
    with pytest.raises(UnexpectedFrame):
        feed(conn, Response(42, b"?"))
    assert conn.data_to_send() == b""
    with pytest.raises(ConnectionClosedError):
        conn.send_message(b"x")
    assert feed(conn, Message(b"ignored")) == []


def test_decode_error_handles_packets_before_it() -> None:
    """Nothing is lost: packets decoded before a malformed one are handled (their events
    are on the error's events) before the DecodeError is raised."""
    conn = engine()
    bad = bytes([4, 0xF8, 0x05]) + bytes(5)  # Message whose length is non-canonical
    with pytest.raises(NonCanonical) as caught:
        conn.receive_data(Message(b"ok").to_bytes() + bad)
    assert caught.value.events[0] == BpmuxMessageReceived(b"ok")
    assert isinstance(caught.value.events[-1], ConnectionEnded)


def test_packet_larger_than_limit_is_frame_too_large() -> None:
    """Memory bound: one packet may not exceed max_packet_size (checked before it is
    buffered)."""
    conn = engine(max_packet_size=64)
    with pytest.raises(FrameTooLarge):
        feed(conn, Response(0, bytes(100)))


def test_connection_done_after_both_close_and_drain() -> None:
    """BP-31 (DECISION): both Closes sent and nothing open -> ConnectionDone."""
    conn = engine()
    req_id = conn.send_request(b"q")
    conn.send_close()
    assert not any(type(e).__name__ == "ConnectionDone" for e in feed(conn, Close()))
    assert not conn.done
    events = feed(conn, Response(req_id, b"a"))
    assert type(events[-1]).__name__ == "ConnectionDone" and conn.done
    assert conn.receive_data(b"") == [ConnectionEnded(True)]


def test_eof_fails_open_requests_and_flows() -> None:
    """BP-31: EOF ends every open request and inner stream with an event."""
    conn = engine()
    req_id = conn.send_request(b"q")
    stream = conn.open_stream(b"", credit=5)
    feed(conn, Request(0, b"x"), CreateSink(0, b""))
    assert conn.receive_data(b"") == [
        RequestAborted(req_id, outgoing=True), RequestAborted(0, outgoing=False),
        InnerAborted(0), InnerAborted(stream), ConnectionEnded(False)]  # fmt: skip
    with pytest.raises(ConnectionClosedError):
        conn.send_message(b"x")
    assert conn.receive_data(b"more") == []


def test_close_sends_close_and_cancel_all_and_ends_what_is_open() -> None:
    """The engine contract's close(): Close (L31) and CancelAll (L35: we want nothing
    more), every open request and inner stream ends with its event, ``closed`` is True;
    what was queued before is still written, commands are refused, bytes ignored."""
    conn = engine()
    assert not conn.closed
    req_id = conn.send_request(b"q")
    stream = conn.open_stream(b"", credit=5)
    feed(conn, Request(0, b"x"), CreateSink(0, b""))
    assert conn.close() == [
        RequestAborted(req_id, outgoing=True), RequestAborted(0, outgoing=False),
        InnerAborted(0), InnerAborted(stream), ConnectionEnded(False)]  # fmt: skip
    assert conn.closed and conn.close() == []
    assert sent(conn)[-3:] == [CreateStream(stream, 5, b""), Close(), CancelAll()]
    with pytest.raises(ConnectionClosedError):
        conn.send_message(b"x")
    assert conn.receive_data(Message(b"late").to_bytes(), now=1.0) == []


def test_close_after_both_closes_and_nothing_open_is_clean() -> None:
    """close() when Close was sent already and the connection is done: no packet is
    owed (no second Close, nothing to cancel), the end is clean."""
    conn = engine()
    conn.send_close()
    feed(conn, Close())
    sent(conn)
    assert conn.close() == [ConnectionEnded(True)]
    assert conn.data_to_send() == b""


def test_closed_after_eof_and_after_a_violation() -> None:
    """``closed`` (the engine contract) is True once the transport ended or the peer
    broke a rule; the violation's error carries the events before it."""
    eof = engine()
    eof.receive_data(b"")
    assert eof.closed
    failed = engine()
    with pytest.raises(UnexpectedFrame) as caught:
        feed(failed, Message(b"before"), Response(7, b"?"))
    assert failed.closed and caught.value.events[0] == BpmuxMessageReceived(b"before")


def test_engine_follows_the_generated_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine consults the generated `connection` table for every packet: make the
    row "remote_closed receive Message" an ignore row and a Message after Close is
    dropped instead of failing the connection."""
    table = dict(ConnectionMachine.RECEIVE["peer"])
    table[(ConnectionState.REMOTE_CLOSED, Message)] = ((None, IGNORE),)
    monkeypatch.setitem(ConnectionMachine.RECEIVE, "peer", table)
    conn = engine()
    assert feed(conn, Close(), Message(b"dropped")) == [PeerClosed()]
