"""Wire compatibility between two versions of a protocol, from their IDL models.

``diff_protocols(old, new)`` compares two loaded ``Protocol`` models (not their YAML
text) and returns every ``Change`` it finds, each judged for both directions a deployed
mix of peers can take:

- **breaks old readers**: a peer built from the NEW file writes, a peer built from the
  OLD file reads (the new writer -> old reader direction);
- **breaks new readers**: an OLD writer -> a NEW reader;
- **compatible**: neither.

How the two directions are told apart
-------------------------------------
Every judgement asks one question: does what a *writer* of one version puts on the wire
come out of a *reader* of the other version as the same thing, or is it refused?  The
answer is computed from what each side's generated code does (``plan.py`` and the
templates): a reader refuses trailing bytes, values outside a field's ``min``/``max``,
members outside a closed enum, non-UTF-8 strings and a null where none is allowed; it
ignores reserved bits and flag bits its frame does not declare; an unknown frame code
meets its ``unknown:`` policy.

Who reads is decided by who sends.  A frame's ``sender`` says which side writes it, so
its readers are the other side: a change to a frame only the server sends (``sender:
server``) affects readers on the client side, and the report says so (``readers``); a
frame sent by ``any`` side, the header, the framing and the unknown-frame policy affect
both.  A struct or union is read by whoever reads a frame that holds it (a struct both
sides send is reported once, for both).  Frames are paired by name, then (for what is
left) by code, so a rename that keeps the wire code (RSocket's RESPONSE -> PAYLOAD, code
0x0A) is a rename and its layouts are compared; a frame whose code changed
(``frame-recoded``) is read by the other version by what that version's decoder table
has at the code *for that direction of travel* (RabbitMQ's draft shares a code between
a request and its response, told apart by sender).  When a frame's ``sender`` changes,
the new direction of travel is new to the readers at its end, and a direction it no
longer travels leaves new readers with old writers' frames (``frame-sender-changed``).
Which writer/reader pair a machine change concerns follows the roles: what one role
sends is read by the machine's other role(s), what it receives by itself.

The rules, by what changed (each has one small IDL pair in ``tests/idl_diff/``):

- ``framing-changed``: the length prefix (breaks both) or ``max_frame_size`` (a larger
  one breaks old readers, which refuse the larger frames new writers may send; a smaller
  one breaks new readers).
- ``encodings-changed``: an encoding added (old readers cannot read what new writers
  send in it) or removed (the reverse).
- ``discriminator-changed``: the header fields that choose the frame (breaks both:
  every code means something else; codes are then not compared frame by frame), or
  their bits, judged like any integer over the codes writers actually send.
- ``unknown-policy-changed``: a more lenient policy (``error`` < ``ignore_if_flag`` <
  ``skip_length``) breaks old readers, since new writers may count on peers dropping an
  unknown frame that old readers refuse; a stricter one breaks new readers.
- ``frame-added``: old readers meet an unknown code (their ``unknown:`` policy decides:
  ``skip_length`` drops it, ``ignore_if_flag`` drops it only when the frame always sets
  the flag, ``error`` refuses it) or, if an old frame of the same direction has the
  code, misread it as that frame; new readers are not affected (old writers never send
  it).  ``frame-removed`` is the mirror image.
- ``frame-recoded``: the code (or ``also_codes``) changed; each side reads the other's
  code with its own decoder table.  ``frame-renamed``: same code, new name (compatible).
- ``field-added`` / ``field-removed``: judged by presence.  A reader expects a field
  always, or when a flag bit is set; a writer writes it always, when a bit is set, or
  never.  Old writers never set a bit their frame leaves undeclared, so a field added
  behind a new flag does not break new readers; a field added unconditionally does (old
  frames lack it), except a ``rest`` field at the end, which reads as empty.  Old
  readers break whenever the new field is on the wire.
- ``field-reordered``: fields in both versions whose relative order changed (values
  swapping places inside one word are ``bits-moved`` instead).
- ``field-retyped``, ``field-resized``, ``bits-moved``, ``value-range-changed``: an
  integer is judged value by value: a writer's values (its type, ``min``/``max``,
  ``const``) must come out of the reader's bits unchanged and inside the reader's
  bounds.  So a plain ``i32`` with ``min: 1`` read back as the 31-bit value of a word
  whose top bit is reserved is compatible in both directions, while a ``u32`` stream id
  that becomes 31 bits breaks new readers for ids above 2^31-1 only.  Bytes and strings
  compare their length encoding, UTF-8 and null; arrays their count and elements;
  structs and unions their fields and variants (``variant-retagged``,
  ``variant-added``, ``variant-removed``, ``union-changed``), reported once per struct
  however many frames use it (structs of the same name no paired field reaches are
  compared too).  A value of another kind is misread, except a single trailing value
  that becomes a trailing array of such values (``count: rest``): old frames read as an
  array of one, only the array's writers break the single value's readers.
- ``field-renamed``: a field at the same place under a new name (compatible; a field
  that also changed kind is paired this way when it is the only one left between the
  same neighbours, and its kind change is judged as above);
  ``default-changed``: what writers write when told nothing (compatible: readers take
  any value their bounds allow; RSocket's SETUP version fields are the example).
- ``flag-moved`` (a flag's bit changed: breaks both), ``flag-added`` /
  ``flag-removed`` (compatible: readers ignore bits their frame does not declare; a
  flag that guards a field is judged with the field), ``flag-renamed``.
- ``presence-changed``: the flag a field depends on changed (judged as above).
- ``enum-member-added``: breaks old readers when the enum is closed (they refuse the new
  value) and is compatible when it is open; ``enum-member-removed`` breaks new readers
  when the new enum is closed; ``enum-member-renumbered`` breaks both;
  ``enum-member-renamed`` (same value) is compatible; ``enum-closed`` breaks new
  readers, ``enum-opened`` old readers.  Readers are those of the frames whose fields
  use the enum; an enum no field uses breaks nobody.
- machines (``diff_machines``): a frame a peer may now send where the old table refused
  it (``machine-send-allowed``) breaks old readers, the peers that were never sent it
  there; a frame no longer sent (``machine-send-refused``) is compatible; a received
  frame the new table refuses or drops where the old one accepted it
  (``machine-receive-refused``, ``machine-receive-dropped``) breaks new readers, since
  old peers still send it; accepting more (``machine-receive-allowed``) and a different
  next state (``machine-target-changed``) are compatible; machines, roles and states
  added or removed are reported as compatible notes.

Every change carries both places it comes from (``file:line`` of the old and the new
IDL, either absent when the thing exists on one side only).
"""

from __future__ import annotations

from typing import Final

from wirestream.codegen.diff.changes import SIDES, Change, Comparison, Where
from wirestream.codegen.diff.frames import compare_frames
from wirestream.codegen.diff.machines import compare_machines
from wirestream.codegen.frontend.model import Protocol

__all__ = ["Change", "Where", "breaking", "diff_protocols"]

POLICY_LENIENCY: Final = {"error": 0, "ignore_if_flag": 1, "skip_length": 2}


def diff_protocols(old: Protocol, new: Protocol) -> list[Change]:
    """Every change from ``old`` to ``new``, judged for old and for new readers."""
    cmp = Comparison(old, new)
    compare_framing(cmp)
    frame_map = compare_frames(cmp)
    compare_machines(cmp, frame_map)
    return cmp.changes


def breaking(changes: list[Change], fail_on: str) -> list[Change]:
    """The changes that count as breaking for ``--fail-on`` (old-readers, new-readers,
    any, none)."""
    if fail_on == "none":
        return []
    if fail_on == "old-readers":
        return [c for c in changes if c.breaks_old_readers]
    if fail_on == "new-readers":
        return [c for c in changes if c.breaks_new_readers]
    return [c for c in changes if c.breaking]


# --- framing, encodings, unknown-frame policy --------------------------------------------


def compare_framing(cmp: Comparison) -> None:
    old, new = cmp.old, cmp.new
    both = frozenset(SIDES)

    def prefix(proto: Protocol) -> str:
        length = proto.framing.length_prefix
        return f"a {length.name} length prefix" if length else "self-delimiting frames"

    if prefix(old) != prefix(new):
        cmp.add("framing-changed", "framing", old_breaks=True, new_breaks=True, readers=both,
                reason=f"frames are delimited by {prefix(new)} instead of {prefix(old)}: "
                       "neither side finds the other's frame boundaries",
                old_line=old.line("framing"), new_line=new.line("framing"))  # fmt: skip
    old_max, new_max = old.framing.max_frame_size, new.framing.max_frame_size
    if old_max != new_max:
        bigger = new_max > old_max
        who = "old" if bigger else "new"
        cmp.add("framing-changed", "framing: max_frame_size", old_breaks=bigger,
                new_breaks=not bigger, readers=both,
                reason=f"max_frame_size {old_max} -> {new_max}: {who} readers refuse frames of "
                       f"{min(old_max, new_max) + 1}..{max(old_max, new_max)} bytes, which "
                       f"{'new' if bigger else 'old'} writers may send",
                old_line=old.line("framing.max_frame_size", "framing"),
                new_line=new.line("framing.max_frame_size", "framing"))  # fmt: skip
    for encoding in sorted(set(old.encodings) ^ set(new.encodings)):
        added = encoding in new.encodings
        cmp.add("encodings-changed", f"encoding {encoding}", old_breaks=added,
                new_breaks=not added, readers=both,
                reason=(f"{encoding} added: old readers cannot read frames new writers encode "
                        "with it" if added else
                        f"{encoding} removed: new readers cannot read frames old writers "
                        "encode with it"),
                old_line=old.line("encodings") if not added else None,
                new_line=new.line("encodings") if added else None)  # fmt: skip
    if old.discriminator != new.discriminator:
        cmp.add("discriminator-changed", "header: discriminator", old_breaks=True,
                new_breaks=True, readers=both,
                reason=f"frames are told apart by {', '.join(new.discriminator)} instead of "
                       f"{', '.join(old.discriminator)}: every code reads as something else",
                old_line=old.line("header.discriminator"),
                new_line=new.line("header.discriminator"))  # fmt: skip
    compare_unknown(cmp)


def unknown_text(proto: Protocol) -> str:
    unknown = proto.unknown
    if unknown.policy == "ignore_if_flag":
        return f"dropped when the {unknown.flag} flag is set, refused otherwise"
    if unknown.policy == "skip_length":
        assert unknown.length is not None
        return f"skipped by a {unknown.length.name} length"
    return "refused"


def compare_unknown(cmp: Comparison) -> None:
    old, new = cmp.old.unknown, cmp.new.unknown
    same_length = (old.length.name if old.length else None) == (
        new.length.name if new.length else None
    )
    if old.policy == new.policy and old.flag == new.flag and same_length:
        return
    lenient = POLICY_LENIENCY[new.policy] - POLICY_LENIENCY[old.policy]
    old_text, new_text = unknown_text(cmp.old), unknown_text(cmp.new)
    if lenient > 0:
        old_breaks, new_breaks = True, False
        why = ("new writers may send frames neither version knows (extensions) counting on "
               "readers to drop them; old readers do not")  # fmt: skip
    elif lenient < 0:
        old_breaks, new_breaks = False, True
        why = ("old writers may send frames neither version knows counting on readers to drop "
               "them; new readers do not")  # fmt: skip
    else:
        old_breaks = new_breaks = True
        why = "each side drops unknown frames by a rule the other does not follow"
    cmp.add("unknown-policy-changed", "unknown", old_breaks=old_breaks, new_breaks=new_breaks,
            readers=frozenset(SIDES),
            reason=f"an unknown frame was {old_text}, is {new_text}: {why}",
            old_line=cmp.old.line("unknown.policy", "unknown"),
            new_line=cmp.new.line("unknown.policy", "unknown"))  # fmt: skip
