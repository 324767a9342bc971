"""The typed model between the YAML and the templates (as in betterproto).

``wirestream.codegen.frontend.build`` turns a validated IDL file into these plain dataclasses; the Python
target reads only them. Nothing here knows about YAML or jinja2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union


@dataclass(frozen=True)
class IntType:
    """An integer wire type: fixed-size (either byte order) or one of the variable-length
    flavours, each with its canonical rule enforced on decode (``VAR_FLAVOURS``)."""

    name: str  # canonical: ``u32`` (big-endian), ``u32le``, ``varint``, ``vbi``...
    bits: int  # value bits (64 for varint, varu64, zigzag and lenenc; 28 for vbi)
    signed: bool
    size: int | None  # bytes on the wire; None when variable
    little: bool = False  # fixed-size: least significant byte first
    flavour: str = "fixed"  # "fixed" or the variable-length flavour (its name)

    @property
    def min(self) -> int:
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def max(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1


INT_TYPES: dict[str, IntType] = {
    name: IntType(name, bits, signed, bits // 8)
    for name, bits, signed in [
        ("u8", 8, False),
        ("u16", 16, False),
        ("u24", 24, False),
        ("u32", 32, False),
        ("u64", 64, False),
        ("i8", 8, True),
        ("i16", 16, True),
        ("i32", 32, True),
        ("i64", 64, True),
    ]
}
INT_TYPES.update(
    {
        name + "le": IntType(name + "le", bits, signed, bits // 8, little=True)
        for name, bits, signed in [
            ("u16", 16, False),
            ("u24", 24, False),
            ("u32", 32, False),
            ("u64", 64, False),
            ("i16", 16, True),
            ("i32", 32, True),
            ("i64", 64, True),
        ]
    }
)
# The variable-length flavours, and the canonical rule each decoder enforces:
VAR_FLAVOURS = {
    # unsigned LEB128 (protobuf varint): at most 10 bytes, value < 2^64, shortest form only
    # (no trailing 0x80 groups: an overlong encoding is NonCanonical)
    "varint": IntType("varint", 64, False, None, flavour="varint"),
    # VarU64: first byte < 248 is the value, 248..255 announce 1..8 big-endian bytes;
    # shortest form only
    "varu64": IntType("varu64", 64, False, None, flavour="varu64"),
    # MQTT 5 Variable Byte Integer (1.5.5): 7 bits a byte, least significant group first,
    # at most 4 bytes (values < 268,435,456), shortest form only
    "vbi": IntType("vbi", 28, False, None, flavour="vbi"),
    # zigzag-mapped signed 64-bit value in LEB128 (protobuf sint64): shortest form only
    "zigzag": IntType("zigzag", 64, True, None, flavour="zigzag"),
    # MySQL length-encoded integer: < 0xFB one byte; 0xFC + 2, 0xFD + 3, 0xFE + 8 bytes
    # little-endian; 0xFB is NULL (only where a nullable length allows it), 0xFF an error;
    # shortest form only
    "lenenc": IntType("lenenc", 64, False, None, flavour="lenenc"),
}
INT_TYPES.update(VAR_FLAVOURS)
WORD_TYPES = ("u8", "u16", "u32", "u64", "u16le", "u32le", "u64le")


def resolve_int_type(name: str, little: bool) -> IntType | None:
    """The integer type an IDL name means in a file whose default byte order is little
    (``little``) or big: ``u32`` takes the default, ``u32le``/``u32be`` say theirs."""
    if (
        name.endswith("be")
        and name[:-2] in INT_TYPES
        and INT_TYPES[name[:-2]].size not in (None, 1)
    ):
        return INT_TYPES[name[:-2]]
    found = INT_TYPES.get(name)
    if found is None:
        return None
    if little and found.flavour == "fixed" and not found.little and (found.size or 0) > 1:
        return INT_TYPES[name + "le"]
    return found


FLOAT_TYPES = {"f32": 32, "f64": 64}
"""IEEE 754 binary32 and binary64 (``f32le``, ``f64be``... for an explicit byte order)."""


@dataclass(frozen=True)
class Expr:
    """A size/count expression: literals, earlier field names and ``ctx.NAME``.

    ``tokens`` alternate operands and operators: ("count", "*", "ctx.element_size").
    """

    text: str
    tokens: tuple[str, ...]
    # An expression with parentheses or ``/`` (floor division) is kept as a tree: targets
    # spell the tree; ``tokens`` then list its operands joined by "+" (for ``names``).
    tree: Cond | None = None

    @property
    def names(self) -> list[str]:
        return [t for t in self.tokens[::2] if t[0].isalpha() and not t.startswith("ctx.")]

    @property
    def context_names(self) -> list[str]:
        return [t[4:] for t in self.tokens[::2] if t.startswith("ctx.")]

    @property
    def single_name(self) -> str | None:
        """The field name when the expression is exactly one field reference."""
        if self.tree is None and len(self.tokens) == 1 and self.names:
            return self.tokens[0]
        return None


@dataclass
class Enum:
    name: str
    type: IntType
    open: bool
    values: dict[str, int]
    doc: str


@dataclass
class IntField:
    name: str
    type: IntType
    min: int | None = None
    max: int | None = None
    enum: Enum | None = None
    const: int | None = None
    default: int | None = None
    doc: str = ""
    derived_from: str | None = None  # set when a later field's size/count names this one
    boolean: bool = False  # a one-bit value read and written as a bool (``bool: true``)
    optional: bool = False  # behind an ``if:``: expressions read None as 0
    # A header field read without being consumed (``peek: true``): the frame's first body
    # byte, which chooses the frame and which the frame's own fields read again (MySQL).
    peek: bool = False
    # A bool bit that says whether a later field is present (``if: <this bit>``): derived on
    # encode (``derived_from`` names the field), as a presence flag is.
    presence: bool = False


@dataclass
class FloatField:
    """An IEEE 754 value: NaN payloads and signed zeros round-trip bit for bit."""

    name: str
    bits: int  # 32 | 64
    little: bool
    default: float = 0.0
    doc: str = ""

    @property
    def type_name(self) -> str:
        return f"f{self.bits}{'le' if self.little else ''}"


@dataclass
class BytesField:
    name: str
    is_string: bool
    length: IntType | None  # prefix type
    rest: bool  # runs to the end of the frame
    nullable: bool
    size: Expr | None  # exact size (with `length`: used when > 0)
    doc: str = ""
    terminator: int | None = None  # ends at this byte (consumed, not part of the value)
    forbid: tuple[int, ...] = ()  # characters (strings) or bytes the value must not hold
    # ``transform: {xor: key}``: the bytes on the wire are the value XOR the key (an earlier
    # integer field, its bytes in its byte order, repeated), on encode and decode alike
    xor_key: IntField | None = None


@dataclass
class RefField:
    """A struct or union value."""

    name: str
    target: Struct | Union_
    doc: str = ""


@dataclass
class ArrayField:
    name: str
    element: Element
    count_prefix: IntType | None = None
    count_expr: Expr | None = None
    count_rest: bool = False
    byte_length_prefix: IntType | None = None
    byte_length_expr: Expr | None = None
    doc: str = ""
    terminator: int | None = None  # elements until a byte equal to this (consumed)
    min_count: int = 0  # fewer elements are refused (decode: InvalidValue; encode: EncodeError)


Element = Union[IntField, BytesField, RefField]


@dataclass
class Bit:
    """One run of bits in a word: a value, reserved bits, or the flag bits."""

    kind: str  # "value" | "reserved" | "flags"
    width: int
    value: IntField | None = None  # for kind == "value" (type = the word's type)


@dataclass
class Word:
    type: IntType
    bits: list[Bit]


@dataclass(frozen=True)
class Cond:
    """A condition over earlier values (``if:``, ``rules:``), as a small tree.

    ``op``: "lit" (``value``), "field" (an earlier integer or bool field, ``name``), "flag"
    (a header/frame flag, ``name``), "ctx" (a context value, ``name``), "more" (bytes remain
    in the enclosing frame or length), "remaining" (how many), "not", "and", "or", a
    comparison (``==`` ``!=`` ``<`` ``<=`` ``>`` ``>=``) or an arithmetic/bitwise operator
    (``+`` ``-`` ``*`` ``/`` (floor) ``&`` ``|``), over ``args``.
    """

    op: str
    args: tuple[Cond, ...] = ()
    value: int = 0
    name: str = ""

    def names(self) -> list[str]:
        """The field and flag names the condition reads."""
        if self.op in ("field", "flag"):
            return [self.name]
        return [n for arg in self.args for n in arg.names()]

    def uses_more(self) -> bool:
        return self.op == "more" or any(arg.uses_more() for arg in self.args)

    def uses(self, op: str) -> bool:
        return self.op == op or any(arg.uses(op) for arg in self.args)


WILDCARD = -1
"""A frame code's last part written ``"*"``: any value the other frames do not take."""


@dataclass
class Item:
    """A field or word at one position of a frame/struct/header, with its condition."""

    node: IntField | BytesField | RefField | ArrayField | Word | FloatField
    condition: str | None = None  # presence flag name (a flag, or a bool bit of the record)
    line: int = 0
    when: Cond | None = None  # present only when this holds (``if:`` an expression)
    when_text: str = ""


@dataclass
class Rule:
    """A rule the values of a frame or struct must keep (``rules:``): refused on encode
    (EncodeError) and on decode (RuleViolation), quoting ``spec``."""

    check: Cond
    text: str
    spec: str
    line: int


@dataclass
class Struct:
    name: str
    items: list[Item]
    doc: str = ""
    rules: list[Rule] = field(default_factory=list)


@dataclass
class Union_:
    name: str
    peek: IntType
    mask: int
    variants: dict[int, Struct]
    doc: str = ""


@dataclass
class ContextValue:
    name: str
    keyed_by: str | None
    default: int
    doc: str = ""
    # How the frames of one direction keep the value in step (the generated
    # ``track_context``): after a frame of ``set_by`` (frame, field) the value (for the
    # frame's ``keyed_by`` field) is that field; after a frame of ``cleared_by`` it is the
    # default again.
    set_by: list[tuple[str, str]] = field(default_factory=list)
    cleared_by: list[str] = field(default_factory=list)


@dataclass
class Frame:
    name: str
    code: tuple[int, ...]
    also_codes: list[tuple[int, ...]]
    sender: str  # client | server | any
    flags: dict[str, int]
    set_flags: list[str]
    items: list[Item]
    doc: str = ""
    spec: str = ""
    line: int = 0  # of the frame's name in the IDL, for errors found by a target
    rules: list[Rule] = field(default_factory=list)
    # Flags of several bits that hold a number (MQTT's QoS): name -> the integer field
    # (its type's bits = the run's width) and the run's mask within the flags.
    flag_values: dict[str, tuple[IntField, int]] = field(default_factory=dict)
    fixed_flags: int | None = None  # flag bits no flag names must equal this (checked)
    startup: bool = False  # framed by the protocol's startup header (``startup:``)
    # Decoded as this frame only when this also holds (``select:``), else as the frame
    # whose code ends in ``*`` for the same leading parts, if any.
    select: Cond | None = None
    select_text: str = ""


@dataclass
class Unknown:
    policy: str  # error | ignore_if_flag | skip_length
    flag: str | None = None
    length: IntType | None = None


@dataclass
class Framing:
    length_prefix: IntType | None
    max_frame_size: int
    # Framing described by the header: this header field holds the frame's length
    # (derived on encode, checked on decode), counting ``counts`` bytes:
    # "after_header" (the bytes after the whole header), "after_length" (after the length
    # field), "from_length" (the length field itself and what follows), "frame" (the whole
    # frame); the field's value plus ``adjust`` is that count.
    length_field: str | None = None
    counts: str = "after_header"
    adjust: int = 0


@dataclass
class Startup:
    """``startup:``: a header (with its discriminator and length field) that frames the
    frames marked ``startup: true``: the messages a connection starts with, before the
    protocol's own header applies."""

    header: list[Item]
    discriminator: list[str]
    length_field: str
    counts: str
    adjust: int
    doc: str = ""


@dataclass
class Protocol:
    source: str  # path of the IDL file, as given to the generator
    protocol: str
    version: str
    title: str
    spec: str
    doc: str
    framing: Framing
    encodings: list[str]
    context: list[ContextValue]
    enums: list[Enum]
    structs: list[Struct]  # in dependency order
    unions: list[Union_]
    header: list[Item]
    discriminator: list[str]
    common_flags: dict[str, int]
    unknown: Unknown
    frames: list[Frame] = field(default_factory=list)
    machines: list[Machine] = field(default_factory=list)
    # The integer field (of the header or of frames) that names a frame's stream, as the
    # Spark frame log's stream_id column reads it; None: this protocol has no stream ids.
    stream_id_field: str | None = None
    # The version this one evolved from (``predecessor:``, a file of the same protocol):
    # the generated docs compare the two (``wirestream.codegen.diff.compare``).
    predecessor: str | None = None
    # The first messages of a connection, framed by their own header (PostgreSQL's
    # untyped StartupMessage, SSLRequest, CancelRequest): ``startup:``.
    startup: Startup | None = None
    # Where the keys of the IDL file are: key path (as ``IdlError`` names it, e.g.
    # ``enums.ErrorCode.values.CANCELED``, ``frames.Setup.flags.lease``) -> line, for
    # tools that point into the file (``wirestream diff``).  Fields, frames, machines
    # and their rows carry their own ``line``.
    lines: dict[str, int] = field(default_factory=dict)

    def line(self, path: str, default: str | None = None) -> int:
        """The line of key ``path`` (else of ``default``, else 1)."""
        found = self.lines.get(path)
        if found is None and default is not None:
            found = self.lines.get(default)
        return found or 1


# --- state machines ---------------------------------------------------------------


@dataclass(frozen=True)
class Condition:
    """``name`` (a flag or an integer field of the frame or header) must be in ``values``.

    Flags test as booleans (values {True} or {False}); integer fields as one or more
    allowed values (enum members already resolved to their numbers).
    """

    name: str
    is_flag: bool
    values: tuple[int, ...]
    text: str  # as written in the IDL, for docs ("complete", "!follows", "error_code in (...)")
    negated: bool = False  # `{not: ...}`: the field must NOT hold any of ``values``


@dataclass
class Transition:
    """One row of a machine's table: (role, from-state, send|receive, frame) -> outcome."""

    role: str
    source: str
    direction: str  # "send" | "receive"
    frame: str  # a frame name, or "*" for any frame that no other row of the state matches
    conditions: list[Condition]
    outcome: str  # "to" | "ignore" | "error"
    target: str | None  # for "to"
    message: str  # for "error": why it is illegal; otherwise the row's note
    spec: str
    line: int


@dataclass
class Machine:
    name: str  # lower_snake, unique per protocol version
    doc: str
    spec: str
    scope: str  # "connection" | "stream" | "element" ... (what one instance tracks)
    roles: list[str]
    states: dict[str, str]  # name -> doc, in declaration order
    initial: dict[str, str]  # role -> state
    terminal: list[str]
    transitions: list[Transition]
    line: int
    # Frames whose rows only move this machine: their behaviour belongs to another scope's
    # machine, so the generated dispatch gives them no handler of this machine's.
    observes: list[str] = field(default_factory=list)

    def handled(self, role: str) -> list[str]:
        """The frames ``role`` handles through this machine: each frame with a receive
        row that moves the machine (not ignore, not error), unless it is observed only."""
        frames: list[str] = []
        for row in self.transitions:
            if (row.role == role and row.direction == "receive" and row.outcome == "to"
                    and row.frame != "*" and row.frame not in self.observes
                    and row.frame not in frames):  # fmt: skip
                frames.append(row.frame)
        return frames

    def handler_words(self, frame: str) -> tuple[str, ...]:
        """The words of the engine method the generated dispatch calls for a received
        ``frame``: on, the scope, the frame (machines of one scope share handlers); each
        language joins them its own way (Python ``on_<scope>_<frame in snake case>``)."""
        return ("on", *self.scope.split("_"), *snake_case(frame).split("_"))

    def handler_name(self, frame: str) -> str:
        """The Python engine method for a received ``frame``: ``on_<scope>_<frame>``."""
        return "_".join(self.handler_words(frame))


def snake_case(name: str) -> str:
    """``RequestStream`` -> ``request_stream``."""
    out = []
    for index, char in enumerate(name):
        if char.isupper() and index and not name[index - 1].isupper():
            out.append("_")
        out.append(char.lower())
    return "".join(out)
