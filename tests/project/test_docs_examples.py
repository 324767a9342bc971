"""Every code example of README.md, docs/**/*.md and idl/README.md runs here, so none can
drift from the code again.

One test per Markdown file runs its blocks in order, in one temporary folder (a later
block may read what an earlier one wrote, as a reader following the page would):

- python with ``>>>``: doctest, one namespace per file (the tour builds on itself);
- other python: executed in the page's namespace (top-level ``await`` allowed); a
  `title` names what it runs against (tests/support/doc_examples.py: an rsocket server or a
  msgpack ticker started here, the broker with fresh stream names, Spark's shared
  session, a pcap of a broker session); the streaming queries a Spark block starts are
  run over what is there and stopped;
- sh: every line that runs ``wirestream`` (or ``.venv/bin/wirestream``), ``tshark`` or
  ``git fetch`` is run, servers (``... serve``) in the background on a free port; a
  ``$ command`` line is a transcript, and the lines after it are its output;
- yaml: loaded and validated by the IDL front end (``wirestream.codegen.load_protocol``):
  a whole file, a sketch put into a minimal complete IDL (``BASE``), an excerpt merged
  over the file its title names ("in idl/..."), or an addition to it ("added to
  idl/..."); ``{...}`` and ``[...]`` placeholders dropped, repeated keys refused;
- ts: compiled by tsc against the workspace packages, then run by node;
- csv (text, json) titled with a file name: written there, for the blocks after it.

``NOT_RUN`` lists the blocks no test runs, each with its reason.
"""

from __future__ import annotations

import ast
import asyncio
import copy
import doctest
import inspect
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.doc_examples import (
    BROKER,
    PEERS,
    ROOT,
    RSOCKET_SERVER,
    SPARK,
    GIT_CLONE,
    PCAP,
    SUPER_STREAM,
    TICKER,
    Example,
    examples,
    markdown_files,
)

# (file, first line of the block) -> why no test runs it. Keep it short.
NOT_RUN: dict[tuple[str, str], str] = {
    ("docs/install.md", "make demo"): "`make demo` and `make test` are what CI runs",
}

# A minimal complete IDL that YAML fragments are put into.
BASE: dict[str, Any] = {
    "wirestream": 1,
    "protocol": "doc",
    "version": "v1",
    "title": "Documentation example",
    "framing": {"length_prefix": "u24"},
    "header": {"fields": [{"name": "frame_type", "type": "u8"}], "discriminator": "frame_type"},
    "unknown": {"policy": "error"},
    "frames": {"Ping": {"code": 1, "fields": []}},
    # what idl/README.md's sketches of fields name
    "enums": {"ErrorCode": {"type": "u32", "values": {"INVALID_SETUP": 1}}},
    "structs": {"Broker": {"fields": [{"name": "host", "type": "string", "length": "u16"}]}},
}
SECTIONS = set(BASE) | {
    "predecessor", "spec", "doc", "byte_order", "startup", "encodings", "context", "enums",
    "structs", "unions", "machines", "frame_log",
}  # fmt: skip

# A block of one of these languages titled with a file name is that file, which the
# page's later blocks read (the title shows the name on the site).
FILE_LANGS = ("csv", "text", "json")
FILE = re.compile(r"[\w-]+\.\w+")
BROKER_URI = "rabbitmq-stream://guest:guest@127.0.0.1:5552/%2f"
WIRESTREAM = re.compile(r"^(?:\.venv/bin/)?wirestream\b|\|\s*(?:\.venv/bin/)?wirestream\b")
RUN = re.compile(
    rf"{WIRESTREAM.pattern}|^tshark\b|^git fetch\b"
)  # the shell lines run (wireshark: a GUI)


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def first_line(example: Example) -> str:
    return example.code.lstrip().split("\n", 1)[0]


def not_run(example: Example) -> str | None:
    for (file, start), reason in NOT_RUN.items():
        if relative(example.path) == file and first_line(example).startswith(start):
            return reason
    return None


# --- YAML ------------------------------------------------------------------------------


def without_placeholders(node: Any) -> Any:
    """The fragment with `{...}` / `[...]` (a sketch's "and so on") left out."""
    if isinstance(node, dict):
        return {
            k: without_placeholders(v)
            for k, v in node.items()
            if k != "..." and v != {"...": None} and v != ["..."]
        }
    if isinstance(node, list):
        return [without_placeholders(v) for v in node if v != "..." and v != {"...": None}]
    return node


def as_idl(fragment: Any) -> dict[str, Any]:
    """A complete IDL holding ``fragment``: a whole file as it is; top-level sections over
    BASE's (a fragment's `frames` replace BASE's; `header` with its own frames); a list of
    fields (or a mapping holding `rules`) as the fields of a frame `Example`."""
    idl = copy.deepcopy(BASE)
    if isinstance(fragment, list):
        idl["frames"]["Example"] = {"code": 2, "fields": fragment}
        return idl
    assert isinstance(fragment, dict), f"not an IDL fragment: {fragment!r}"
    if "rules" in fragment and not set(fragment) & SECTIONS:
        idl["frames"]["Example"] = {"code": 2, **fragment}
        return idl
    unknown = set(fragment) - SECTIONS
    assert not unknown, f"keys that are no top-level IDL section: {sorted(unknown)}"
    for key, value in fragment.items():
        idl[key] = value
    return idl


def added_to(idl: dict[str, Any], fragment: dict[str, Any]) -> dict[str, Any]:
    """A protocol's IDL with a fragment added: named entries (frames, enums, ...) added
    or replaced, a machine's rows put before its own."""
    for section, entries in fragment.items():
        if section == "machines":
            for name, machine in entries.items():
                rows = machine.pop("transitions", [])
                idl["machines"].setdefault(name, {}).update(machine)
                idl["machines"][name]["transitions"][:0] = rows
        elif isinstance(entries, dict):
            idl.setdefault(section, {}).update(entries)
        else:
            idl[section] = entries
    return idl


def merged(into: Any, part: Any) -> Any:
    """``part`` over ``into``: mappings key by key (what the part leaves out, or shows as
    a `{...}` / `[...]` placeholder, stays the file's), anything else replaced."""
    if isinstance(into, dict) and isinstance(part, dict):
        return {**into, **{k: merged(into.get(k), v) for k, v in part.items()}}
    return part


def named_fields(node: Any) -> Iterator[list[Any]]:
    """Every list of fields of an IDL (frames', structs', header's, startup's)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "fields" and isinstance(value, list):
                yield value
            yield from named_fields(value)


def field_names(field: dict[str, Any]) -> set[str]:
    if "word" in field:
        return {bit["name"] for bit in field["bits"] if "name" in bit}
    return {field["name"]}


def fields_in(idl: dict[str, Any], fields: list[Any], where: str) -> dict[str, Any]:
    """The IDL with each field of the excerpt in place of the file's field (or word) of the
    same name(s): the excerpt's fields are checked where they stand in the file."""
    for field in fields:
        names = field_names(field)
        best = max(
            ((len(field_names(f) & names), run, i)
             for run in named_fields(idl) for i, f in enumerate(run) if isinstance(f, dict)),
            key=lambda found: found[0], default=(0, [], 0),
        )  # fmt: skip
        assert best[0], f"{where}: no field {sorted(names)} in the file"
        best[1][best[2]] = field
    return idl


class UniqueKeyLoader(yaml.SafeLoader):
    """YAML whose mappings may not repeat a key (PyYAML keeps the last one silently, so
    a block listing alternatives under one key would have only its last one checked)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        keys = [self.construct_object(key, deep=deep) for key, _ in node.value]
        repeated = sorted({str(k) for k in keys if keys.count(k) > 1})
        if repeated:
            raise yaml.constructor.ConstructorError(
                None, None, f"repeated keys {repeated}", node.start_mark
            )
        return super().construct_mapping(node, deep)


def validate_yaml(example: Example, tmp_path: Path) -> None:
    """The block checked by the IDL front end: a title "idl/<file>" or none: a whole file,
    or a fragment put into ``BASE``; "added to idl/<file>": new entries (and a machine's
    rows) added to that file; "in idl/<file>": an excerpt of that file, merged over it
    (a list of fields: each in place of the file's field of that name)."""
    from wirestream.codegen import load_protocol

    fragment = without_placeholders(yaml.load(example.code, UniqueKeyLoader))  # noqa: S506
    title = example.title
    if title.startswith(("added to idl/", "in idl/")):
        protocol = yaml.safe_load((ROOT / title.split(" ", 2)[-1]).read_text())
        if title.startswith("added to "):
            idl = added_to(protocol, fragment)
        elif isinstance(fragment, list):
            idl = fields_in(protocol, fragment, example.where)
        else:
            idl = merged(protocol, fragment)
    else:
        idl = as_idl(fragment)
    path = tmp_path / "idl_example.yaml"
    path.write_text(yaml.safe_dump(idl, sort_keys=False), encoding="utf-8")
    load_protocol(path, example.where)


# --- Python ----------------------------------------------------------------------------


def run_doctest(example: Example, globs: dict[str, Any]) -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(example.code, globs, example.where, str(example.path), example.line)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    runner = doctest.DocTestRunner(optionflags=flags)
    out: list[str] = []
    runner.run(test, out=out.append, clear_globs=False)
    globs.update(test.globs)  # DocTest runs on a copy; the page's next block goes on from here
    assert runner.failures == 0, "".join(out)


def run_python(example: Example, source: str, namespace: dict[str, Any]) -> None:
    """The block run in the page's namespace (a later block uses what an earlier one made,
    as the page's reader does)."""
    code = compile(source, example.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace.setdefault("__name__", "__doc_example__")
    if code.co_flags & inspect.CO_COROUTINE:
        coroutine = eval(code, namespace)  # noqa: S307 (the documentation's own example)
        asyncio.run(asyncio.wait_for(coroutine, 60))
    else:
        exec(code, namespace)  # noqa: S102


# --- peers -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wirestream_env(tmp_path: Path) -> dict[str, str]:
    """PATH with a `wirestream` that is this checkout's, run by this interpreter (`-P`: not
    the one of a clone it runs in)."""
    shim = tmp_path / ".bin"
    shim.mkdir(exist_ok=True)
    script = shim / "wirestream"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -P -m wirestream "$@"\n')
    script.chmod(0o755)
    env = dict(os.environ, PATH=f"{shim}{os.pathsep}{os.environ['PATH']}")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


@contextmanager
def background(command: str, cwd: Path, env: dict[str, str]) -> Iterator[None]:
    """A server command of a block, until the block is done; up once it says so."""
    server = subprocess.Popen(command, shell=True, cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        assert first.startswith("listening on "), (command, first, server.stderr.read())
        yield
    finally:
        os.killpg(server.pid, 2)
        server.wait(10)


def ports_of(code: str) -> dict[str, str]:
    """Each port a block names (`--port N`, `host:N`) -> a free one for this run."""
    ports = set(re.findall(r"--port (\d{4,5})\b", code))
    ports |= set(re.findall(r"127\.0\.0\.1:(\d{4,5})\b", code))
    ports.discard("5552")  # the broker's: it runs there
    return {port: str(free_port()) for port in ports}


def on_ports(code: str, ports: dict[str, str]) -> str:
    for old, new in ports.items():
        code = re.sub(rf"(--port |127\.0\.0\.1:){old}\b", rf"\g<1>{new}", code)
    return code


@contextmanager
def rsocket_server(env: dict[str, str], cwd: Path, port: str) -> Iterator[None]:
    with background(f"wirestream rsocket serve --port {port}", cwd, env):
        yield


def require_broker() -> None:
    """The page's test asked for the session's broker (``BROKER_TITLES``): it answers."""
    from tests.support.rabbitmq_broker import answers

    assert answers(5552), "the RabbitMQ stream broker must run (tests/support/rabbitmq_broker.py)"


# The titles of blocks that need the RabbitMQ broker: a page with one asks the test session
# for it (the ``rabbitmq_broker`` fixture starts it when nothing answers, once per session).
BROKER_TITLES = (BROKER, SUPER_STREAM, PCAP)


@contextmanager
def broker_names(source: str, super_stream: bool, shell: bool = False) -> Iterator[str]:
    """The block with a fresh name for each stream it creates (Python's
    `create_stream("name")`, the shell's `rabbitmq create name`) and for the super stream
    `invoices`, made with three partitions as `rabbitmq-streams add_super_stream` makes it
    (the 3.10 broker has no CreateSuperStream); all deleted afterwards."""
    from tests.support.rabbitmq_broker_ctl import add_super_stream, delete_super_stream
    from tests.support.rabbitmq_stream_client_support import unique
    from wirestream.runtime.rabbitmq_stream.aio import connect

    created = r"rabbitmq create ([\w-]+)" if shell else r'create_stream\("([\w-]+)"'
    streams = {name: unique(f"doc-{name}") for name in re.findall(created, source)}
    # Spark's source and sink name theirs: made here, the first (the source) with ticks
    named = dict.fromkeys(re.findall(r'option\("stream", "([\w-]+)"\)', source))
    streams |= {name: unique(f"doc-{name}") for name in named}
    if named:
        asyncio.run(filled([streams[name] for name in named]))
    invoices = unique("doc-invoices")
    for old, new in [*streams.items(), *([("invoices", invoices)] if super_stream else [])]:
        if shell:  # the name as a word of a command line
            source = re.sub(rf"(?<![\w-]){re.escape(old)}(?![\w-])", new, source)
        else:
            source = source.replace(f'"{old}"', f'"{new}"')
    if super_stream:
        add_super_stream(invoices, 3)
    try:
        yield source
        if named:  # the block's query took the source's ticks to each of its sinks
            counts = asyncio.run(message_counts([streams[name] for name in named]))
            assert counts == [10] * len(named), dict(zip(named, counts))
    finally:
        if super_stream:
            delete_super_stream(invoices)

        async def delete() -> None:
            async with await connect(BROKER_URI) as client:
                for stream in streams.values():
                    await client.delete_stream(stream, missing_ok=True)

        asyncio.run(delete())


async def filled(streams: list[str]) -> None:
    """The streams made, empty, the first with ten of the demo's msgpack ticks."""
    from wirestream.apps.ticker import ticks
    from wirestream.runtime.rabbitmq_stream.aio import connect

    async with await connect(BROKER_URI) as client:
        for stream in streams:
            await client.create_stream(stream)
        producer = await client.producer(streams[0])
        await (await producer.send_many(list(ticks(10))))


async def message_counts(streams: list[str]) -> list[int]:
    from wirestream.runtime.rabbitmq_stream.aio import connect

    counts = []
    async with await connect(BROKER_URI) as client:
        for stream in streams:
            async with await client.consumer(stream, offset="first") as consumer:
                seen = 0
                while True:
                    try:
                        await asyncio.wait_for(anext(consumer), 2)
                    except TimeoutError:
                        break
                    seen += 1
            counts.append(seen)
    return counts


@contextmanager
def ticker() -> Iterator[int]:
    """The demo's market (msgpack ticks on request-stream, wirestream.apps.ticker) served
    in this process on a free port; a subscription that names no count gets 100 ticks,
    so that a query over it can run to its end. The block's query must take some."""
    from wirestream.apps.ticker import TickerResponder, parse_request
    from wirestream.runtime.rsocket import serve
    from wirestream.runtime.spark.background import BackgroundLoop

    class Ticker(TickerResponder):
        def request_stream(self, payload: Any) -> Any:
            return self._stream(parse_request(payload.data) or 100)

    responder = Ticker()
    loop = BackgroundLoop("docs ticker")
    try:
        server = loop.run(serve("tcp://127.0.0.1:0", responder), 10)
        yield int(server.url.rsplit(":", 1)[1])
        assert responder.sent, "no query took a tick"

        async def shut() -> None:
            server.close()
            await server.wait_closed()

        loop.run(shut(), 10)
    finally:
        loop.close()


def in_folder(source: str, folder: Path) -> str:
    """A Spark block's relative paths (what it loads, its checkpoints) made absolute under
    ``folder``: the JVM resolves them from its own working directory, which is the test
    run's, not the folder the block runs in (a reader's JVM starts where they are)."""
    return re.sub(r'(\.load\(|"checkpointLocation", )"(?![/\w]+:)([^"/][^"]*)"',
                  lambda m: f'{m[1]}"{folder / m[2]}"', source)  # fmt: skip


def broker_pcap(folder: Path) -> None:
    """``folder/prod.pcap``, what the page's tcpdump line takes (which needs capture
    rights): a session with the broker (a stream made, three messages published and
    read, the stream deleted) recorded by the client's tap and written as pcapng with
    the broker's port, 5552 (the reader takes pcapng under any name)."""
    from tests.support.rabbitmq_stream_client_support import unique
    from wirestream.runtime.capture import CaptureWriter
    from wirestream.runtime.capture.pcap import write_pcapng
    from wirestream.runtime.capture.writer import capture_files
    from wirestream.runtime.rabbitmq_stream.aio import connect

    if (folder / "prod.pcap").exists():
        return
    require_broker()

    async def session(capture: CaptureWriter) -> None:
        async with await connect(BROKER_URI, capture=capture) as client:
            stream = unique("doc-pcap")
            await client.create_stream(stream)
            producer = await client.producer(stream)
            await (await producer.send_many([b"a", b"b", b"c"]))
            async with await client.consumer(stream, offset="first") as consumer:
                async for message in consumer:
                    if message.offset == 2:
                        break
            await client.delete_stream(stream)

    with CaptureWriter(folder / "broker" / "session.wscap", "rabbitmq_stream/1") as capture:
        asyncio.run(session(capture))
    files = capture_files(folder / "broker" / "session.wscap")
    assert write_pcapng(files, folder / "prod.pcap") > 10


def ran_queries(spark: Any) -> None:
    """The streaming queries a block started, run over what is there and stopped (a query
    that failed raises here)."""
    for query in spark.streams.active:
        try:
            query.processAllAvailable()
        finally:
            query.stop()


# --- shell -------------------------------------------------------------------------------


def run_shell(example: Example, code: str, tmp_path: Path, env: dict[str, str]) -> None:
    idl = tmp_path / "idl"
    if not idl.exists():  # the repository's protocols (read only), beside the page's own
        idl.mkdir()
        for protocol in (ROOT / "idl").iterdir():
            if protocol.is_dir():
                (idl / protocol.name).symlink_to(protocol)
    if not (tmp_path / "generated").exists():  # the dissectors tshark loads
        (tmp_path / "generated").symlink_to(ROOT / "generated")
    lines = on_ports(code, ports_of(code)).replace("\\\n", "").splitlines()
    with ExitStack() as servers:
        i = 0
        while i < len(lines):
            line = lines[i].strip()
            i += 1
            transcript = line.startswith("$ ")
            command = re.sub(r"\s+#.*$", "", line.removeprefix("$ "))
            if not command or command.startswith("#") or not RUN.search(command):
                continue
            command = re.sub(r"(^|\|\s*)\.venv/bin/wirestream", r"\1wirestream", command)
            if " serve" in command:
                servers.enter_context(background(command, tmp_path, env))
                continue
            done = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=tmp_path,
                                  env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
            shown: list[str] = []
            while transcript and i < len(lines) and not lines[i].startswith("$ "):
                shown.append(lines[i])
                i += 1
            expected_status = 1 if transcript and "diff" in command else 0
            assert done.returncode in (
                0,
                expected_status,
            ), f"{example.where}: `{command}` exited {done.returncode}\n{done.stderr}"
            if transcript:
                assert (
                    done.stdout.splitlines() == shown
                ), f"{example.where}: `{command}` printed\n{done.stdout}"


def clone(tmp_path: Path) -> Path:
    """A shallow clone of this checkout's HEAD, whose `origin` (a bare repository here)
    has it as `main`: a CI checkout of a branch about to merge."""
    origin, work = tmp_path / "origin.git", tmp_path / "clone"
    for command in (["git", "init", "-q", "--bare", "--initial-branch=main", str(origin)],
                    ["git", "-C", str(ROOT), "push", "-q", str(origin), "HEAD:refs/heads/main"],
                    ["git", "clone", "-q", "--depth", "1", f"file://{origin}", str(work)]):  # fmt: skip
        subprocess.run(command, check=True, capture_output=True, timeout=120)
    return work


# --- TypeScript --------------------------------------------------------------------------

TS_CONFIG = {
    "compilerOptions": {
        "strict": True, "target": "ES2022", "lib": ["ES2022"], "module": "NodeNext",
        "moduleResolution": "NodeNext", "types": ["node"], "noEmitOnError": True,
    },
    "files": ["example.ts"],
}  # fmt: skip


def run_typescript(example: Example, node: str, cwd: Path) -> None:
    """The block compiled by tsc (strict, as tests/typescript) against the workspace
    packages the ``node`` fixture built, then run by node in ``cwd`` (the page's folder:
    what it writes, later blocks read). It is written in a folder of the checkout, so that
    `@wirestream/...` resolves through its node_modules."""
    from tests.support.typescript_support import TSC, run

    folder = Path(tempfile.mkdtemp(prefix="example-", dir=ROOT / "out" / "doc-examples"))
    try:
        (folder / "example.ts").write_text(example.code, encoding="utf-8")
        (folder / "tsconfig.json").write_text(json.dumps(TS_CONFIG), encoding="utf-8")
        run([node, str(TSC), "-p", str(folder)], f"{example.where}: tsc")
        run([node, str(folder / "example.js")], f"{example.where}: node", cwd=cwd)
    finally:
        shutil.rmtree(folder)


# --- the tests ---------------------------------------------------------------------------


def run_example(example: Example, tmp_path: Path, globs: dict[str, Any],
                env: dict[str, str], request: pytest.FixtureRequest) -> None:  # fmt: skip
    known = (
        example.title.startswith(("added to ", "idl/", "in idl/"))
        or FILE.fullmatch(example.title)
        or all(part in PEERS for part in filter(None, example.title.split(", ")))
    )
    assert known, f"{example.where}: unknown title {example.title!r}"
    if example.lang == "yaml" and example.title.startswith("idl/"):
        validate_yaml(example, tmp_path)
        (tmp_path / example.title).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / example.title).write_text(example.code, encoding="utf-8")  # the file
    elif example.lang == "yaml":
        validate_yaml(example, tmp_path)
    elif example.lang == "sh":
        with ExitStack() as stack:
            code = example.code
            if BROKER in example.title or SUPER_STREAM in example.title:
                require_broker()
                code = stack.enter_context(broker_names(code, SUPER_STREAM in example.title, True))
            if PCAP in example.title:
                broker_pcap(tmp_path)
            run_shell(example, code, clone(tmp_path) if GIT_CLONE in example.title else tmp_path,
                      env)  # fmt: skip
    elif example.lang in FILE_LANGS and FILE.fullmatch(example.title):
        (tmp_path / example.title).write_text(example.code, encoding="utf-8")  # what blocks read
    elif example.lang == "ts":
        (ROOT / "out" / "doc-examples").mkdir(parents=True, exist_ok=True)  # /out/: ignored
        run_typescript(example, request.getfixturevalue("node"), tmp_path)
    elif example.lang == "python":
        source = example.code
        with ExitStack() as stack:
            if example.title.startswith("added to "):
                compile(textwrap.dedent(source), example.where, "exec")  # run where it goes
                return
            if PCAP in example.title:
                broker_pcap(tmp_path)
            if RSOCKET_SERVER in example.title:
                port = str(free_port())
                source = source.replace("127.0.0.1:7878", f"127.0.0.1:{port}")
                stack.enter_context(rsocket_server(env, tmp_path, port))
            if TICKER in example.title:
                port = stack.enter_context(ticker())
                source = source.replace("127.0.0.1:7878", f"127.0.0.1:{port}")
            if BROKER in example.title or SUPER_STREAM in example.title:
                require_broker()
                source = stack.enter_context(broker_names(source, SUPER_STREAM in example.title))
            if SPARK in example.title:
                source = "spark = __spark__\n" + in_folder(source, tmp_path)
                globs["__spark__"] = request.getfixturevalue("spark")
            cwd = Path.cwd()
            os.chdir(tmp_path)
            sys.path.insert(0, str(tmp_path))  # what a page generated there imports
            try:
                if source.lstrip().startswith(">>>"):
                    run_doctest(example, globs)
                else:
                    run_python(example, source, globs)
                if SPARK in example.title:
                    ran_queries(globs["__spark__"])
            finally:
                sys.path.remove(str(tmp_path))
                os.chdir(cwd)
    else:
        pytest.fail(f"{example.where}: a {example.lang or 'plain'} block no test runs")


@pytest.mark.parametrize("path", markdown_files(), ids=relative)
def test_every_example_of_the_page_runs(path: Path, tmp_path: Path,
                                        request: pytest.FixtureRequest) -> None:  # fmt: skip
    env = wirestream_env(tmp_path)
    globs: dict[str, Any] = {}
    failed: list[str] = []
    if any(example.title in BROKER_TITLES for example in examples(path)):
        request.getfixturevalue("rabbitmq_broker")
    for example in examples(path):
        if not example.lang or not_run(example):
            continue  # output and layout listings (no language); the listed exceptions
        try:
            run_example(example, tmp_path, globs, env, request)
        except Exception as error:  # every drifted example of the page, not just the first
            failed.append(f"{example.where} ({example.lang}): {type(error).__name__}: {error}")
    assert not failed, "\n\n".join(failed)


def test_the_exceptions_are_still_there() -> None:
    """A listed exception whose block is gone is removed from the list."""
    starts = {(relative(e.path), first_line(e)) for p in markdown_files() for e in examples(p)}
    for file, start in NOT_RUN:
        assert any(f == file and line.startswith(start) for f, line in starts), (file, start)


@pytest.mark.parametrize("path", markdown_files(), ids=relative)
def test_every_fence_is_read(path: Path) -> None:
    """Each fence line opens or closes a block the test reads: a fence it misreads (say, a
    backtick in a title, which CommonMark does not allow there) would hide blocks."""
    fences = re.findall(r"^[ \t]*`{3,}", path.read_text(encoding="utf-8"), re.MULTILINE)
    assert len(fences) == 2 * len(examples(path))
