"""The Rust target's native packers: ``generated/rust/py_pack/<protocol>_<version>.rs``.

Every generated Python frame class has ``pack(field, ..., ctx=None) -> bytes``: the bytes of
that frame without making the object (``Frame(...).to_bytes(ctx)`` is what its Python body
does). A client that sends a query per call spends more making the frame object and walking
its encoder in Python than the peers' hand-written writers spend in all (issue 26's encode
figures against pg8000 and PyMySQL). This module spells, for each frame, a PyO3 function that
takes the same arguments, builds the generated Rust codec's borrowed frame from them (no copy
of a ``str`` or ``bytes``) and encodes it with the Rust encoder -- one encoder per language,
both generated from the same plan, so nothing here knows a layout.

The module is ``#[path]``-included by the extension ``runtime/rust/wirestream-native``
(``pack.rs`` has the conversions), which exports the functions in
``wirestream.runtime._native.packers`` by Python module; the generated Python module puts
them in place of its ``pack`` methods at import (``_support.use_native_packers``). A packer
is a fast path, not a judge: whatever it does not take exactly (a type it does not expect, a
context, a value the Rust encoder refuses) goes to the Python ``pack``, which gives the same
bytes or the precise error.

Frames get no packer where a field is a record, a union or a float, or where the encoding
reads the connection's context (the Rust encoder would need the context converted): their
``pack`` stays Python.
"""

from __future__ import annotations

import re

from wirestream.codegen.plan.codec import AttrPlan, CodecPlan, ElementPlan, IntPlan, RecordPlan
from wirestream.codegen.plan.codec import layout_fingerprint, lower_snake
from wirestream.codegen.targets.rust.codec import (
    Code,
    Spell,
    crate_name,
    ident,
    itype_rust,
    lit,
    rustfmt,
    type_name,
    value_rust,
)

DIR = "py_pack"  # under generated/rust: modules, not a crate (no Cargo.toml)


def python_module(plan: CodecPlan) -> str:
    """The generated Python module whose frames these packers stand for."""
    return f"wirestream.generated.{plan.protocol}.{plan.version}"


class Packers:
    """The packers of one protocol version, from the same ``Spell`` as its crate."""

    def __init__(self, plan: CodecPlan) -> None:
        self.m = plan
        self.sp = Spell(plan)

    # --- which frames ---

    def refusal(self, f: RecordPlan) -> str | None:
        """Why ``f`` has no packer, or None."""
        for a in f.attrs:
            if a.kind in ("ref", "float"):
                return f"{a.name} is a {'record' if a.kind == 'ref' else 'float'}"
            if a.kind == "array":
                assert a.element is not None
                if a.element.kind == "ref":
                    return f"{a.name} is a list of records"
        c = Code()
        self.sp.frame_write(c, f)
        body = c.text().split("-> Result<(), ProtocolError> {", 1)[1]  # after the signature
        if re.search(r"\bctx\b", body):
            return "its encoding reads the connection's context"
        return None

    def frames(self) -> list[RecordPlan]:
        return [f for f in self.m.frames if self.refusal(f) is None]

    # --- conversions: a Rust expression of the field's type from `o: &Bound<PyAny>` ---

    def int_conv(self, v: IntPlan) -> str:
        if v.boolean:
            return "P::boolean(o)"
        if v.enum is not None:
            rtype = itype_rust(self.sp.enums[v.enum].type)
            return f"codec::{v.enum}::from_code(P::int::<{rtype}>(o)?)"
        return f"P::int::<{value_rust(v)}>(o)"

    def element_conv(self, e: ElementPlan) -> str:
        if e.kind == "int":
            assert e.value is not None
            return self.int_conv(e.value)
        assert e.bytes is not None
        base = "P::string(o)" if e.bytes.string else "P::bytes(o)"
        if e.bytes.nullable:
            return f"if o.is_none() {{ Some(None) }} else {{ {base}.map(Some) }}"
        return base

    def scalar(self, a: AttrPlan) -> tuple[str, str]:
        """(the conversion, the default) of a field that is not a list."""
        if a.kind == "bool":
            return "P::boolean(o)", "false"
        if a.kind == "int":
            v = a.value
            assert v is not None
            if v.boolean:
                return "P::boolean(o)", "true" if v.default else "false"
            if v.enum is not None:
                if v.default_member is not None:
                    default = f"codec::{v.enum}::{v.default_member}"
                else:  # not a member: the Python path refuses it
                    rtype = itype_rust(self.sp.enums[v.enum].type)
                    default = f"codec::{v.enum}::from_code({lit(v.default)}_{rtype})?"
                return self.int_conv(v), default
            return self.int_conv(v), f"{lit(v.default)}_{value_rust(v)}"
        if a.kind == "string":
            size = a.fixed_default or 0
            return "P::string(o)", '"' + " " * size + '"'
        assert a.kind == "bytes"
        size = a.fixed_default or 0
        return "P::bytes(o)", f"&[0u8; {size}][..]"

    def field(self, c: Code, a: AttrPlan, of_object: bool = False) -> str:
        """The field's value in the frame literal (lines a list needs go to ``c``);
        ``of_object``: read from a frame object's attributes, not from ``pack``'s arguments
        (a flag from the ``_flags`` slot the Python class keeps them in)."""
        arg = ident(a.name)
        if of_object:
            if a.kind == "bool":
                return f"(__flags & {lit(a.flag_mask)}) != 0"
            c(f"let {arg} = P::Arg::Given(__object.getattr(pyo3::intern!(__object.py(), "
              f'"{a.name}")).ok()?);')  # fmt: skip
        if a.kind == "array":
            assert a.element is not None
            held = "__held_" + a.name
            if of_object and not (a.optional or a.nullable):
                # an attribute None is not the empty list there: the Python encoder refuses it
                c(f"let {held} = Some({arg}.items()??);")
            else:
                c(f"let {held} = {arg}.items()?;")
            each = (
                f"items.iter().map(|o| {self.element_conv(a.element)}).collect::<Option<Vec<_>>>()?"
            )
            if a.optional or a.nullable:
                return f"match &{held} {{ None => None, Some(items) => Some({each}) }}"
            return f"match &{held} {{ None => Vec::new(), Some(items) => {each} }}"
        conv, default = self.scalar(a)
        if a.optional or a.nullable:
            return f"{arg}.opt(|o| {conv})?"
        return f"{arg}.or({default}, |o| {conv})?"

    # --- the module ---

    def packer(self, c: Code, f: RecordPlan) -> None:
        name = "pack_" + lower_snake(f.name)
        params = [f"{ident(a.name)} = P::Arg::Missing" for a in f.attrs] + ["ctx = P::Arg::Missing"]
        c(f"/// `{f.name}.pack`: the bytes of a {f.name} with these fields.",
          "#[pyfunction]",
          '#[pyo3(name = "pack")]',
          f"#[pyo3(signature = ({', '.join(params)}))]",
          "#[allow(clippy::too_many_arguments)]",
          f"fn {name}<'py>(__py: Python<'py>, "
          + "".join(f"{ident(a.name)}: P::Arg<'py>, " for a in f.attrs)
          + "ctx: P::Arg<'py>) -> PyResult<Bound<'py, PyBytes>> {")  # fmt: skip
        c("if ctx.absent() {", "let __fast = (|| -> Option<Vec<u8>> {")
        values = [f"{ident(a.name)}: {self.field(c, a)}" for a in f.attrs]
        c(f"let __frame = codec::{type_name(f.name)} {{ {', '.join(values)} }};",
          f"codec::Frame::{f.name}(__frame).encode().ok()",
          "})();",
          "if let Some(__bytes) = __fast { return Ok(PyBytes::new(__py, &__bytes)); }",
          "}")  # fmt: skip
        args = [f'("{a.name}", &{ident(a.name)})' for a in f.attrs] + ['("ctx", &ctx)']
        c(f'P::fallback(__py, MODULE, "{f.name}", &[{", ".join(args)}])', "}")

    def object_encoder(self, c: Code, f: RecordPlan) -> None:
        """``object_<frame>``: a frame object's bytes, from its attributes."""
        c(f"/// A `{f.name}` object's bytes (`__framed`: with the transport framing), or None.",
          f"fn object_{lower_snake(f.name)}(__object: &Bound<'_, PyAny>, __framed: bool) "
          "-> Option<Vec<u8>> {")  # fmt: skip
        masks = [a.flag_mask for a in f.attrs if a.kind == "bool"]
        if masks:
            # bits no flag of the frame names: the Python encoder writes them (or fails)
            known = 0
            for mask in masks:
                known |= mask
            c("let __flags: u64 = __object.getattr(pyo3::intern!(__object.py(), \"_flags\"))"
              ".ok()?.extract().ok()?;",
              f"if __flags & !{lit(known)} != 0 {{ return None; }}")  # fmt: skip
        values = [f"{ident(a.name)}: {self.field(c, a, of_object=True)}" for a in f.attrs]
        c(f"let __frame = codec::Frame::{f.name}(codec::{type_name(f.name)} "
          f"{{ {', '.join(values)} }});",
          "if __framed { __frame.frame_bytes().ok() } else { __frame.encode().ok() }",
          "}")  # fmt: skip

    def object_bytes(self, c: Code, frames: list[RecordPlan]) -> None:
        c("/// The module's `encode(frame)` (`framed` false) or `frame_bytes(frame)` (true),",
          "/// natively: None for a frame of a class without a native encoder, of another",
          "/// module, or anything the fast path does not take -- the Python function decides.",
          "#[pyfunction]",
          "fn object_bytes<'py>(frame: &Bound<'py, PyAny>, framed: bool) "
          "-> Option<Bound<'py, PyBytes>> {",
          "let cls = frame.get_type();",
          "if cls.module().ok()?.to_str().ok()? != MODULE { return None; }",
          "let bytes = match cls.name().ok()?.to_str().ok()? {")  # fmt: skip
        for f in frames:
            c(f'"{f.name}" => object_{lower_snake(f.name)}(frame, framed),')
        c("_ => None,", "}?;", "Some(PyBytes::new(frame.py(), &bytes))", "}")

    def render(self) -> str:
        m = self.m
        crate = crate_name(m).replace("-", "_")
        c = Code()
        c(f"// Generated by wirestream codegen from {m.source} -- do not edit.",
          "// Edit the IDL and run `wirestream generate --target rust`.",
          f"//! {m.title}: the native `pack` of each frame class of `{python_module(m)}`",
          "//! (codegen/targets/rust/py_pack.py): the generated Rust frame, borrowed from the",
          "//! arguments, encoded by the generated Rust encoder; anything else goes to the",
          "//! Python `pack` (`crate::pack`). Included by the `wirestream.runtime._native`",
          "//! extension (`runtime/rust/wirestream-native`).",
          "#![allow(unused_imports, clippy::redundant_closure, clippy::redundant_closure_call,",
          "    clippy::unnecessary_cast)]",
          "",
          "use pyo3::prelude::*;",
          "use pyo3::types::{PyBytes, PyDict};",
          f"use {crate} as codec;",
          "",
          "use crate::pack as P;",
          "",
          "/// The Python module whose frame classes these packers stand for.",
          f'pub const MODULE: &str = "{python_module(m)}";',
          "/// The plan these packers were generated from (`layout_fingerprint`): the Python",
          "/// module uses them only when its own is the same.",
          f'pub const FINGERPRINT: &str = "{layout_fingerprint(m)}";')  # fmt: skip
        frames = self.frames()
        for f in frames:
            self.packer(c, f)
            self.object_encoder(c, f)
        self.object_bytes(c, frames)
        c("/// The fingerprint and the packers by frame class name.",
          "pub fn packers<'py>(m: &Bound<'py, PyModule>) -> PyResult<(&'static str, Bound<'py, PyDict>)> {",
          "let packers = PyDict::new(m.py());")  # fmt: skip
        for f in frames:
            c(f'packers.set_item("{f.name}", wrap_pyfunction!(pack_{lower_snake(f.name)}, m)?)?;')
        c('packers.set_item("object_bytes", wrap_pyfunction!(object_bytes, m)?)?;',
          "Ok((FINGERPRINT, packers))", "}")  # fmt: skip
        return rustfmt(c.text())


def render_py_pack(plan: CodecPlan) -> str:
    """``py_pack/<protocol>_<version>.rs``."""
    return Packers(plan).render()
