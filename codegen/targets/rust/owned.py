"""The Rust target's owned forms (issue 28: "decode borrows ...; owned forms behind a
feature"): the module ``owned`` of a protocol version's crate, compiled with the feature
``owned``.

Decoding borrows (``Frame<'a>``: bytes and strings are slices of the input), which is what
a parser wants and what a queue, a channel or a map cannot hold past the read buffer. For
each record that borrows, ``owned`` has a struct of the same name whose bytes are
``Vec<u8>`` and strings ``String`` (records that borrow nothing are the crate's own,
re-exported), and the two convert both ways:

- ``frame.into_owned()`` (or ``owned::Frame::from(&frame)``): a copy of every byte field;
- ``owned.as_view()``: the borrowed form again, borrowing from the owned one, which is
  what ``encode`` takes (``owned.encode()`` does that), so there is one encoder and one
  decoder, never a second copy of the layout to drift.

The corpus runner replays every case through ``into_owned().as_view()`` and compares
it with the decoded frame (fields and re-encoded bytes), so a field the conversion drops
or changes fails there.
"""

from __future__ import annotations

from wirestream.codegen.plan.codec import AttrPlan, ElementPlan, RecordPlan
from wirestream.codegen.targets.rust.codec import (
    Code,
    Spell,
    doc_lines,
    ident,
    type_name,
    value_type,
)


class Owned:
    """The ``owned`` module of one crate, from the same ``Spell`` as its ``lib.rs``."""

    def __init__(self, sp: Spell) -> None:
        self.sp = sp
        self.m = sp.m
        self.frame_borrows = {f.name: sp.record_borrows_attrs(f) for f in sp.m.frames}
        self.frame_borrows["UnknownFrame"] = True  # its body

    # --- types ---

    def named(self, name: str) -> str:
        return name  # the owned struct, or the crate's own when it borrows nothing

    def element_type(self, e: ElementPlan) -> str:
        if e.kind == "int":
            assert e.value is not None
            return value_type(e.value)
        if e.kind == "bytes":
            assert e.bytes is not None
            base = "String" if e.bytes.string else "Vec<u8>"
            return f"Option<{base}>" if e.bytes.nullable else base
        assert e.ref is not None
        return self.named(e.ref)

    def attr_type(self, a: AttrPlan) -> str:
        if a.kind in ("bytes", "string", "ref", "array"):
            if a.kind == "bytes":
                base = "Vec<u8>"
            elif a.kind == "string":
                base = "String"
            elif a.kind == "ref":
                assert a.ref is not None
                base = self.named(a.ref)
            else:
                assert a.element is not None
                base = f"Vec<{self.element_type(a.element)}>"
            return f"Option<{base}>" if a.optional or a.nullable else base
        return self.sp.attr_type(a)  # integers, enums, bools, floats: Copy, the same type

    # --- borrowed -> owned: `place` is a value of the borrowed type (`is_ref`: a reference
    # to one, as closures over iterators and options get) ---

    def element_owned(self, e: ElementPlan, place: str, is_ref: bool) -> str:
        if e.kind == "int":
            return f"*{place}" if is_ref else place
        if e.kind == "bytes":
            assert e.bytes is not None
            if e.bytes.nullable:  # Option<&[u8]> / Option<&str>: Copy, mapped in place
                return f"{place}.map({'String::from' if e.bytes.string else '<[u8]>::to_vec'})"
            if e.bytes.string:
                return f"String::from({'*' + place if is_ref else place})"
            return f"{place}.to_vec()"
        assert e.ref is not None
        if self.sp.record_borrows(e.ref):
            return f"{e.ref}::from({place if is_ref else '&' + place})"
        return f"{place}.clone()"

    def base_owned(self, a: AttrPlan, place: str, is_ref: bool) -> str:
        if a.kind == "bytes":
            return f"{place}.to_vec()"
        if a.kind == "string":
            return f"String::from({'*' + place if is_ref else place})"
        if a.kind == "ref":
            assert a.ref is not None
            if self.sp.record_borrows(a.ref):
                return f"{a.ref}::from({place if is_ref else '&' + place})"
            return f"{place}.clone()"
        assert a.element is not None
        if not self.sp.element_borrows(a.element):
            return f"{place}.clone()"
        one = self.element_owned(a.element, "x", True)
        return f"{place}.iter().map(|x| {one}).collect()"

    def attr_owned(self, a: AttrPlan, place: str) -> str:
        if not self.sp.attr_borrows(a):
            if a.kind in ("ref", "array"):
                return f"{place}.clone()"
            return place  # Copy
        if a.optional or a.nullable:
            return f"{place}.as_ref().map(|x| {self.base_owned(a, 'x', True)})"
        return self.base_owned(a, place, False)

    # --- owned -> borrowed (the view) ---

    def element_view(self, e: ElementPlan, place: str) -> str:
        """``place``: a reference to an owned element (iterators give references)."""
        if e.kind == "int":
            return f"*{place}"
        if e.kind == "bytes":
            assert e.bytes is not None
            if e.bytes.nullable:
                return f"{place}.as_deref()"
            return f"{place}.as_str()" if e.bytes.string else f"{place}.as_slice()"
        assert e.ref is not None
        if self.sp.record_borrows(e.ref):
            return f"{place}.as_view()"
        return f"{place}.clone()"

    def base_view(self, a: AttrPlan, place: str, is_ref: bool) -> str:
        if a.kind == "bytes":
            return f"{place}.as_slice()"
        if a.kind == "string":
            return f"{place}.as_str()"
        if a.kind == "ref":
            return f"{place}.as_view()"
        assert a.element is not None
        return f"{place}.iter().map(|x| {self.element_view(a.element, 'x')}).collect()"

    def attr_view(self, a: AttrPlan, place: str) -> str:
        if not self.sp.attr_borrows(a):
            if a.kind in ("ref", "array"):
                return f"{place}.clone()"
            return place
        if a.optional or a.nullable:
            if a.kind in ("bytes", "string"):
                return f"{place}.as_deref()"
            return f"{place}.as_ref().map(|x| {self.base_view(a, 'x', True)})"
        return self.base_view(a, place, False)

    # --- items ---

    def record(self, c: Code, rec: RecordPlan, name: str) -> None:
        """``name``: the struct's Rust name (a frame named like a Rust built-in, MySQL's
        ``Ok``, is ``OkFrame`` in both forms)."""
        c(f"/// The owned form of [`super::{name}`].",
          "#[derive(Debug, Clone, PartialEq)]", f"pub struct {name} {{")  # fmt: skip
        for a in rec.attrs:
            c(*doc_lines(a.doc), f"pub {ident(a.name)}: {self.attr_type(a)},")
        c("}", f"impl From<&super::{name}<'_>> for {name} {{",
          f"fn from(v: &super::{name}<'_>) -> Self {{", "Self {")  # fmt: skip
        for a in rec.attrs:
            c(f"{ident(a.name)}: {self.attr_owned(a, 'v.' + ident(a.name))},")
        c("}", "}", "}", f"impl {name} {{",
          f"/// The borrowed form, borrowing from `self` (what `encode` takes).",
          f"pub fn as_view(&self) -> super::{name}<'_> {{", f"super::{name} {{")  # fmt: skip
        for a in rec.attrs:
            c(f"{ident(a.name)}: {self.attr_view(a, 'self.' + ident(a.name))},")
        c("}", "}", "}")

    def union(self, c: Code, name: str, variants: list[tuple[int, str]]) -> None:
        c(f"/// The owned form of [`super::{name}`].",
          "#[derive(Debug, Clone, PartialEq)]", f"pub enum {name} {{")  # fmt: skip
        for _, v in variants:
            c(f"{v}({self.named(v)}),")
        c("}", f"impl From<&super::{name}<'_>> for {name} {{",
          f"fn from(v: &super::{name}<'_>) -> Self {{", "match v {")  # fmt: skip
        for _, v in variants:
            conv = f"{v}::from(x)" if self.sp.record_borrows(v) else "x.clone()"
            c(f"super::{name}::{v}(x) => {name}::{v}({conv}),")
        c("}", "}", "}", f"impl {name} {{",
          "/// The borrowed form, borrowing from `self`.",
          f"pub fn as_view(&self) -> super::{name}<'_> {{", "match self {")  # fmt: skip
        for _, v in variants:
            view = "x.as_view()" if self.sp.record_borrows(v) else "x.clone()"
            c(f"{name}::{v}(x) => super::{name}::{v}({view}),")
        c("}", "}", "}")

    def unknown(self, c: Code) -> None:
        m = self.m
        if m.unknown == "error":
            return
        fields = ["code", *(ident(v.name) for v in m.header_values)]
        if m.has_flags:
            fields.append("flags")
        c("/// The owned form of [`super::UnknownFrame`].",
          "#[derive(Debug, Clone, PartialEq)]", "pub struct UnknownFrame {",
          "/// The unknown type code (and the header's other values, as received).",
          f"pub code: {self.sp.key_type() if m.single_code else f'[{self.sp.key_type()}; {len(m.discriminator)}]'},")  # fmt: skip
        for v in m.header_values:
            c(*doc_lines(v.doc), f"pub {ident(v.name)}: {value_type(v)},")
        if m.has_flags:
            c("/// All flag bits as received.", f"pub flags: {self.sp.flags_type()},")
        c("/// The frame's bytes after the header.", "pub body: Vec<u8>,", "}",
          "impl From<&super::UnknownFrame<'_>> for UnknownFrame {",
          "fn from(v: &super::UnknownFrame<'_>) -> Self {", "Self {",
          *(f"{f}: v.{f}," for f in fields), "body: v.body.to_vec(),", "}", "}", "}",
          "impl UnknownFrame {", "/// The borrowed form, borrowing from `self`.",
          "pub fn as_view(&self) -> super::UnknownFrame<'_> {", "super::UnknownFrame {",
          *(f"{f}: self.{f}," for f in fields), "body: &self.body,", "}", "}", "}")  # fmt: skip

    @staticmethod
    def frame_type(name: str) -> str:
        """A ``Frame`` variant's struct (``UnknownFrame`` is the crate's own name)."""
        return name if name == "UnknownFrame" else type_name(name)

    def frame(self, c: Code) -> None:
        m = self.m
        names = [f.name for f in m.frames] + (["UnknownFrame"] if m.unknown != "error" else [])
        c("/// The owned form of [`super::Frame`]: it owns its bytes, so it can outlive the",
          "/// buffer it was decoded from (queues, channels, maps).",
          "#[derive(Debug, Clone, PartialEq)]", "pub enum Frame {")  # fmt: skip
        for n in names:
            c(f"{n}({self.frame_type(n)}),")
        c("}", "impl From<&super::Frame<'_>> for Frame {",
          "fn from(v: &super::Frame<'_>) -> Self {", "match v {")  # fmt: skip
        for n in names:
            conv = f"{self.frame_type(n)}::from(x)" if self.frame_borrows[n] else "x.clone()"
            c(f"super::Frame::{n}(x) => Frame::{n}({conv}),")
        c("}", "}", "}", "impl Frame {",
          "/// The borrowed form, borrowing from `self`: what `encode` and the machines take.",
          "pub fn as_view(&self) -> super::Frame<'_> {", "match self {")  # fmt: skip
        for n in names:
            view = "x.as_view()" if self.frame_borrows[n] else "x.clone()"
            c(f"Frame::{n}(x) => super::Frame::{n}({view}),")
        c("}", "}",
          "/// The frame's class name, as Python and TypeScript spell it.",
          "pub fn class_name(&self) -> &'static str {", "match self {")  # fmt: skip
        for n in names:
            c(f'Frame::{n}(_) => "{n}",')
        c("}", "}",
          "/// The frame's bytes, without the transport's length prefix.",
          "pub fn encode(&self) -> Result<Vec<u8>, ProtocolError> {",
          "self.as_view().encode()", "}",
          "/// The frame's bytes in a connection's context (its defaults when `None`).",
          "pub fn encode_with(&self, ctx: Option<&Context>) -> Result<Vec<u8>, ProtocolError> {",
          "self.as_view().encode_with(ctx)", "}", "}",
          "impl super::Frame<'_> {",
          "/// The owned form of this frame: every byte and string field copied out of the",
          "/// buffer it borrows from (feature `owned`).",
          "pub fn into_owned(self) -> Frame {", "Frame::from(&self)", "}", "}",
          "/// `data`'s frame, owned: [`super::decode`], then [`super::Frame::into_owned`].",
          "pub fn decode(data: &[u8]) -> Result<Frame, ProtocolError> {",
          "super::decode(data).map(super::Frame::into_owned)", "}")  # fmt: skip

    def kept(self) -> set[str]:
        """The records that borrow nothing but that an owned record or frame names."""
        m = self.m
        names: set[str] = set()
        for rec in [*m.structs, *m.frames]:
            for a in rec.attrs:
                ref = a.ref or (a.element.ref if a.element is not None else None)
                if ref is not None and not self.sp.record_borrows(ref):
                    names.add(ref)
            if not self.frame_borrows.get(rec.name, True):
                names.add(type_name(rec.name))
        for u in m.unions:
            names.update(v for _, v in u.variants if not self.sp.record_borrows(v))
        return names

    def render(self) -> str:
        m = self.m
        c = Code()
        c(f"// Generated by wirestream codegen from {m.source} -- do not edit.",
          "//! Owned forms of the frames and records that borrow (feature `owned`): byte fields",
          "//! are `Vec<u8>`, strings `String`; records that borrow nothing are the crate's own.",
          "//! `frame.into_owned()` copies a decoded frame out of its buffer; `as_view()` gives",
          "//! the borrowed form back, which is what `encode` and the machines take.",
          "#![allow(clippy::redundant_closure, clippy::clone_on_copy)]",
          "#[allow(unused_imports)]", "use alloc::string::String;", "use alloc::vec::Vec;",
          "#[allow(unused_imports)]", "use super::*;")  # fmt: skip
        kept = sorted(self.kept())
        if kept:
            c("/// Records that borrow nothing: the crate's own, the same in both forms.",
              f"pub use super::{{{', '.join(kept)}}};")  # fmt: skip
        borrowing = {r.name for r in [*m.structs, *m.frames] if self.sp.record_borrows_attrs(r)}
        for s in m.structs:
            if s.name in borrowing:
                self.record(c, s, s.name)
        for u in m.unions:
            if self.sp.record_borrows(u.name):
                self.union(c, u.name, u.variants)
        for f in m.frames:
            if f.name in borrowing:
                self.record(c, f, type_name(f.name))
        self.unknown(c)
        self.frame(c)
        return c.text()


def render_owned(sp: Spell) -> str:
    """The source of ``src/owned.rs`` (before rustfmt)."""
    return Owned(sp).render()
