"""The conformance runner of the Rust codecs: ``generated/rust/corpus``, a binary that replays
the cross-language corpus (``tests/crosslang/corpus.py``) against every generated crate.

For each protocol version it spells one module converting that crate's frames to and from
the corpus's JSON form (``{"$type": "<Class>", <snake_case field>: ...}``; integers of more
than 32 bits as ``{"big": "..."}``, bytes as ``{"hex": ...}``, floats by their binary64
bits); ``main.rs`` (``templates/corpus_main.rs.j2``) holds the checks, as
``tests/typescript/corpus.test.ts`` does for TypeScript. It is a dev tool of this repository
(``publish = false``): serde_json is its dependency, not the codecs'.
"""

from __future__ import annotations

from wirestream.codegen.plan.codec import AttrPlan, CodecPlan, ElementPlan, IntPlan, RecordPlan
from wirestream.codegen.plan.machines import MachinesPlan, pascal
from wirestream.codegen.targets.rust.machines import MachineSpell
from wirestream.codegen.targets.rust.codec import (
    Code,
    Spell,
    crate_name,
    ident,
    int_rust,
    itype_rust,
    type_name,
    value_rust,
)


def int_json(v: IntPlan, src: str) -> str:
    if v.boolean:
        return f"Value::Bool({src})"
    value = f"({src} as {value_rust(v)})" if v.enum is not None else src
    return f"int(({value}).into(), {v.type.bits})"


def int_from(v: IntPlan, src: str) -> str:
    if v.boolean:
        return f"boolean({src})?"
    rtype = value_rust(v)
    value = f"num::<{rtype}>({src})?"
    if v.enum is not None:
        return f'{v.enum}::from_code({value}).ok_or("not a member of {v.enum}")?'
    return value


class CorpusSpell:
    def __init__(self, plan: CodecPlan, machines: MachinesPlan | None = None) -> None:
        self.m = plan
        self.sp = Spell(plan)
        self.machines = machines

    def machine_outcome(self, c: Code) -> None:
        """``machine_outcome``: one Python machine case (a machine class, role, state,
        direction and a frame's bytes) applied to this crate's machine: the new state's
        value, ``None`` for ignored, or the machine's error; and for a received frame, the
        handler method ``dispatch_<role>`` called (a ``Recorder`` implements every handler
        trait), which must agree with ``receive``."""
        assert self.machines is not None
        crate = crate_name(self.m).replace("-", "_")
        spell = MachineSpell(self.m, self.machines)
        c("#[derive(Default)] struct Recorder(Option<&'static str>);")
        for interface in self.machines.interfaces:
            c(f"impl machines::{interface.name} for Recorder {{")
            for h in interface.methods:
                name = "_".join(h.method)
                c(f"fn {name}(&mut self, _: &{spell.frame_ref(h.frame)}) "
                  f'{{ self.0 = Some("{name}"); }}')  # fmt: skip
            c("}")
        c("type Applied = (Result<Option<&'static str>, machines::MachineError>, Option<&'static str>);",
          "pub fn machine_outcome(class: &str, role: &str, state: &str, send: bool, data: &[u8], "
          "sender: Option<&str>, ctx: &Value) -> Result<Applied, String> {",
          "let sender = match sender { Some(\"client\") => Some(Sender::Client), "
          "Some(\"server\") => Some(Sender::Server), _ => None };",
          "let ctx = context_from(ctx)?;",
          f"let frame = {crate}::decode_with(data, ctx.as_ref(), sender)"
          ".map_err(|e| format!(\"decode: {e}\"))?;",
          "let mut recorder = Recorder::default();",
          "match class {")  # fmt: skip
        for m in self.machines.machines:
            role_enum, state = f"machines::{pascal(m.name)}Role", f"machines::{m.state_enum}"
            c(f'"{m.class_name}" => {{',
              f'let role = {role_enum}::from_name(role).ok_or("no such role")?;',
              f'let state = {state}::from_value(state).ok_or("no such state")?;',
              f"let mut machine = machines::{m.class_name}::with_state(role, state);",
              "if send { let allowed = machine.allows_send(&frame); "
              "let sent = machine.send(&frame).map(|s| Some(s.value())); "
              "if allowed != sent.is_ok() { return Err(\"allows_send disagrees with send\".into()); } "
              "return Ok((sent, None)); }",
              "let received = machine.receive(&frame).map(|r| match r { "
              "machines::Received::To(s) => Some(s.value()), machines::Received::Ignored => None });",
              f"let mut again = machines::{m.class_name}::with_state(role, state);",
              "let dispatched = match role {")  # fmt: skip
            for handlers in m.handlers:
                arm = f"{role_enum}::{pascal(handlers.role)}"
                if handlers.interface is None:
                    c(f"{arm} => again.receive(&frame).map(|r| r != machines::Received::Ignored),")
                else:
                    c(f"{arm} => again.dispatch_{handlers.role}(&frame, &mut recorder),")
            c("};",
              "match (&received, &dispatched) { (Ok(r), Ok(taken)) if r.is_some() == *taken => {} "
              "(Err(a), Err(b)) if a == b => {} "
              "_ => return Err(format!(\"dispatch gives {dispatched:?}, receive {received:?}\")) }",
              "if again != machine { return Err(\"dispatch and receive leave different states\".into()); }",
              "Ok((received, recorder.0)) }")  # fmt: skip
        c('_ => Err(format!("no machine {class}")), } }')

    def element_json(self, e: ElementPlan, src: str) -> str:
        if e.kind == "int":
            assert e.value is not None
            return int_json(e.value, f"*{src}")
        if e.kind == "bytes":
            assert e.bytes is not None

            string = e.bytes.string

            def one(x: str) -> str:
                return f"Value::String((*{x}).into())" if string else f"hex_json({x})"

            if e.bytes.nullable:
                return f"{src}.map_or(Value::Null, |x| {one('&x')})"
            return one(src)
        assert e.ref is not None
        return f"{self.record_fn(e.ref)}_json({src})"

    def element_from(self, e: ElementPlan, src: str) -> str:
        if e.kind == "int":
            assert e.value is not None
            return int_from(e.value, src)
        if e.kind == "bytes":
            assert e.bytes is not None
            one = f"string({src})?" if e.bytes.string else f"bytes({src})?"
            if e.bytes.nullable:
                return f"if {src}.is_null() {{ None }} else {{ Some({one}) }}"
            return one
        assert e.ref is not None
        return f"{self.record_fn(e.ref)}_from({src})?"

    def record_fn(self, name: str) -> str:
        from wirestream.codegen.plan.codec import lower_snake

        return lower_snake(name)

    def attr_json(self, a: AttrPlan, src: str) -> str:
        """``src``: a reference to the attribute's value (inside an Option when optional)."""
        if a.kind == "int":
            assert a.value is not None
            return int_json(a.value, f"*{src}")
        if a.kind == "bool":
            return f"Value::Bool(*{src})"
        if a.kind == "float":
            return f"float_json(f64::from(*{src}))"
        if a.kind == "bytes":
            return f"hex_json({src})"
        if a.kind == "string":
            return f"Value::String((*{src}).into())"
        if a.kind == "ref":
            assert a.ref is not None
            return f"{self.record_fn(a.ref)}_json({src})"
        assert a.element is not None
        return (
            f"Value::Array(({src}).iter().map(|e| {self.element_json(a.element, 'e')}).collect())"
        )

    def attr_from(self, a: AttrPlan, src: str) -> str:
        if a.kind == "int":
            assert a.value is not None
            return int_from(a.value, src)
        if a.kind == "bool":
            return f"boolean({src})?"
        if a.kind == "float":
            assert a.float is not None
            return f"float({src})? as f{a.float.bits}"
        if a.kind == "bytes":
            return f"bytes({src})?"
        if a.kind == "string":
            return f"string({src})?"
        if a.kind == "ref":
            assert a.ref is not None
            return f"{self.record_fn(a.ref)}_from({src})?"
        assert a.element is not None
        item = self.element_from(a.element, "e")
        return (f"list({src})?.iter().map(|e| Ok::<_, String>({item}))"
                ".collect::<Result<Vec<_>, String>>()?")  # fmt: skip

    def record(self, c: Code, rec: RecordPlan) -> None:
        name = self.record_fn(rec.name)
        typ = self.sp.rec_type(rec, "'_")
        c(f"fn {name}_json(x: &{typ}) -> Value {{", "let mut m = Map::new();",
          f"m.insert(\"$type\".into(), \"{rec.name}\".into());")  # fmt: skip
        for a in rec.attrs:
            field = f"x.{ident(a.name)}"
            if a.optional or a.nullable:
                value = f"{field}.as_ref().map_or(Value::Null, |v| {self.attr_json(a, 'v')})"
            else:
                value = self.attr_json(a, f"&{field}")
            c(f'm.insert("{a.name}".into(), {value});')
        c("Value::Object(m)", "}")
        typ = self.sp.rec_type(rec, "'static")
        c(f"fn {name}_from(v: &Value) -> Result<{typ}, String> {{",
          f"let m = record(v, \"{rec.name}\")?;",
          f"Ok({type_name(rec.name) if id(rec) in self.sp.frame_ids else rec.name} {{")  # fmt: skip
        for a in rec.attrs:
            got = f'field(m, "{a.name}")?'
            if a.optional or a.nullable:
                value = f"{{ let x = {got}; if x.is_null() {{ None }} else {{ Some({self.attr_from(a, 'x')}) }} }}"
            else:
                value = self.attr_from(a, got)
            c(f"{ident(a.name)}: {value},")
        c("})", "}")

    def union(self, c: Code, name: str, variants: list[tuple[int, str]]) -> None:
        fname = self.record_fn(name)
        typ = self.sp.named_elided(name)
        c(f"fn {fname}_json(x: &{typ}) -> Value {{", "match x {")
        for _, v in variants:
            c(f"{name}::{v}(r) => {self.record_fn(v)}_json(r),")
        c("}", "}")
        styp = f"{name}<'static>" if self.sp.record_borrows(name) else name
        c(f"fn {fname}_from(v: &Value) -> Result<{styp}, String> {{",
          "match v.get(\"$type\").and_then(Value::as_str) {")  # fmt: skip
        for _, v in variants:
            c(f'Some("{v}") => Ok({name}::{v}({self.record_fn(v)}_from(v)?)),')
        c('_ => Err(format!("not a variant of ' + name + ': {v}")),', "}", "}")

    def unknown(self, c: Code) -> None:
        m = self.m
        if m.unknown == "error":
            return
        key = self.sp.key_type()
        code_bits = max(self.sp.header_int(n).type.bits for n in m.discriminator)
        if m.single_code:
            code_json, code_from = (
                f"int(x.code.into(), {code_bits})",
                f'num::<{key}>(field(m, "code")?)?',
            )
        else:
            n = len(m.discriminator)
            code_json = (
                f"Value::Array(x.code.iter().map(|k| int((*k).into(), {code_bits})).collect())"
            )
            code_from = (f"{{ let l = list(field(m, \"code\")?)?; if l.len() != {n} {{ return Err(\"code parts\".into()); }} "
                         f"[{', '.join(f'num::<{key}>(&l[{i}])?' for i in range(n))}] }}")  # fmt: skip
        c("fn unknown_frame_json(x: &UnknownFrame<'_>) -> Value {", "let mut m = Map::new();",
          "m.insert(\"$type\".into(), \"UnknownFrame\".into());",
          f"m.insert(\"code\".into(), {code_json});")  # fmt: skip
        for v in m.header_values:
            c(f"m.insert(\"{v.name}\".into(), {int_json(v, 'x.' + ident(v.name))});")
        flags_bits = 0
        if m.has_flags:
            flags_bits = self.flags_word_bits()
            c(f'm.insert("flags".into(), int(x.flags.into(), {flags_bits}));')
        c('m.insert("body".into(), hex_json(x.body));', "Value::Object(m)", "}")
        c("fn unknown_frame_from(v: &Value) -> Result<UnknownFrame<'static>, String> {",
          "let m = record(v, \"UnknownFrame\")?;", f"Ok(UnknownFrame {{ code: {code_from},")  # fmt: skip
        for v in m.header_values:
            got = 'field(m, "' + v.name + '")?'
            c(f"{ident(v.name)}: {int_from(v, got)},")
        if m.has_flags:
            c(f'flags: num::<{self.sp.flags_type()}>(field(m, "flags")?)?,')
        c('body: bytes(field(m, "body")?)?, })', "}")

    def context(self, c: Code) -> None:
        m = self.m
        c("fn context_from(v: &Value) -> Result<Option<Context>, String> {",
          "if v.is_null() { return Ok(None); }", "let mut ctx = Context::default();")  # fmt: skip
        for plan in m.context:
            key, value = self.sp.ctx_types(plan)
            got = f'field(v.as_object().ok_or("a context is an object")?, "{plan.name}")?'
            if key:
                c(f"for pair in list({got})? {{",
                  "let pair = list(pair)?; if pair.len() != 2 { return Err(\"a pair\".into()); }",
                  f"ctx.{ident(plan.name)}.insert(num::<{key}>(&pair[0])?, num::<{value}>(&pair[1])?); }}")  # fmt: skip
            else:
                c(f"ctx.{ident(plan.name)} = num::<{value}>({got})?;")
        c("Ok(Some(ctx)) }")
        c("fn context_json(ctx: &Context) -> Value {", "let mut m = Map::new();")
        for plan in m.context:
            key, _ = self.sp.ctx_types(plan)
            bits = self.field_bits(plan.set_by[0][1]) if plan.set_by else 32
            if key:
                assert plan.keyed_by is not None
                kbits = self.field_bits(plan.keyed_by)
                c(f"m.insert(\"{plan.name}\".into(), Value::Array(ctx.{ident(plan.name)}.iter()"
                  f".map(|(k, v)| Value::Array(vec![int((*k).into(), {kbits}), int((*v).into(), {bits})]))"
                  ".collect()));")  # fmt: skip
            else:
                c(f'm.insert("{plan.name}".into(), int(ctx.{ident(plan.name)}.into(), {bits}));')
        c("if m.is_empty() { Value::Null } else { Value::Object(m) } }")

    def field_bits(self, name: str) -> int:
        for f in self.m.frames:
            for v in self.sp.record_ints(f):
                if v.name == name:
                    return v.type.bits
        return 32

    def flags_word_bits(self) -> int:
        from wirestream.codegen.plan.codec import FixedRun

        for item in self.m.header_steps:
            s = item.step
            if isinstance(s, FixedRun):
                for u in s.units:
                    if any(b.kind == "flags" for b in u.bits):
                        assert u.type is not None
                        return u.type.bits
        return 32

    def render(self) -> str:
        m = self.m
        c = Code()
        c(f"// Generated by wirestream codegen from {m.source} -- do not edit.",
          f"//! The corpus's JSON form of {crate_name(m)}'s frames.",
          "#![allow(clippy::all, unused_parens, unused_braces, unused_variables, unused_mut)]",
          "use serde_json::{Map, Value};",
          f"use {crate_name(m).replace('-', '_')}::*;",
          "use crate::json::*;")  # fmt: skip
        for s in m.structs:
            self.record(c, s)
        for u in m.unions:
            self.union(c, u.name, u.variants)
        for f in m.frames:
            self.record(c, f)
        self.unknown(c)
        c("pub fn frame_json(f: &Frame<'_>) -> Value {", "match f {")
        for f in m.frames:
            c(f"Frame::{f.name}(x) => {self.record_fn(f.name)}_json(x),")
        if m.unknown != "error":
            c("Frame::UnknownFrame(x) => unknown_frame_json(x),")
        c("}", "}")
        c("pub fn frame_from(v: &Value) -> Result<Frame<'static>, String> {",
          "match v.get(\"$type\").and_then(Value::as_str) {")  # fmt: skip
        for f in m.frames:
            c(f'Some("{f.name}") => Ok(Frame::{f.name}({self.record_fn(f.name)}_from(v)?)),')
        if m.unknown != "error":
            c('Some("UnknownFrame") => Ok(Frame::UnknownFrame(unknown_frame_from(v)?)),')
        c('_ => Err(format!("not a frame: {v}")),', "}", "}")
        self.context(c)
        crate = crate_name(m).replace("-", "_")
        c("type Decoded = (Value, Result<Vec<u8>, &'static str>, Option<Value>);",
          "pub fn decode(data: &[u8], sender: Option<&str>, ctx: &Value, track: bool, startup: bool) -> "
          "Result<Decoded, (&'static str, Option<u64>)> {",
          "let sender = match sender { Some(\"client\") => Some(Sender::Client), "
          "Some(\"server\") => Some(Sender::Server), _ => None };",
          "let ctx = context_from(ctx).map_err(|_| (\"<bad context>\", None))?;",
          f"let decoded = {'if startup { ' + crate + '::decode_startup(data, ctx.as_ref()) } else { ' if m.startup else ''}"
          f"{crate}::decode_with(data, ctx.as_ref(), sender){' }' if m.startup else ''};",
          "let _ = startup;",
          "match decoded {",
          "Ok(f) => { let tracked = if track { let mut running = ctx.clone().unwrap_or_default(); "
          "track_context(&f, &mut running); Some(context_json(&running)) } else { None }; "
          "let encoded = f.encode_with(ctx.as_ref()).map_err(|e| e.class_name()); "
          # the owned form (feature `owned`) must give the same fields and bytes back
          "let owned = f.clone().into_owned(); let view = owned.as_view(); "
          "if frame_json(&view) != frame_json(&f) || owned.encode_with(ctx.as_ref()).map_err(|e| e.class_name()) != encoded "
          "|| owned.class_name() != f.class_name() { return Err((\"<owned form differs>\", None)); } "
          "Ok((frame_json(&f), encoded, tracked)) }",
          "Err(ProtocolError::Truncated { needed }) => Err((\"Truncated\", Some(needed))),",
          "Err(e) => Err((e.class_name(), None)), } }",
          "pub fn build_encode(v: &Value, ctx: &Value) -> Result<Result<Vec<u8>, &'static str>, String> {",
          "let ctx = context_from(ctx)?; let f = frame_from(v)?; "
          "Ok(f.encode_with(ctx.as_ref()).map_err(|e| e.class_name())) }")  # fmt: skip
        if self.machines is not None and self.machines.machines:
            self.machine_outcome(c)
        return c.text()


def render_corpus(plans: list[tuple[CodecPlan, MachinesPlan]]) -> dict[str, str]:
    from wirestream.codegen.targets.rust.codec import _ENV, rustfmt

    files: dict[str, str] = {}
    modules = []
    with_machines = []
    for plan, machines in plans:
        folder = f"{plan.protocol}_{plan.version}"
        files[f"corpus/src/{folder}.rs"] = rustfmt(CorpusSpell(plan, machines).render())
        modules.append((folder, crate_name(plan), f"{plan.protocol}/{plan.version}"))
        if machines.machines:
            with_machines.append(modules[-1])
    files["corpus/Cargo.toml"] = _ENV.get_template("corpus_Cargo.toml.j2").render(modules=modules)
    files["corpus/src/main.rs"] = rustfmt(
        _ENV.get_template("corpus_main.rs.j2").render(modules=modules, machines=with_machines)
    )
    return files


__all__ = ["render_corpus", "int_rust", "itype_rust"]
