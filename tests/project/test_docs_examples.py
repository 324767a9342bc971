"""Every code example of README.md, docs/**/*.md and idl/README.md runs here, so none can
drift from the code again.

One test per Markdown file runs its blocks in order, in one temporary folder (a later
block may read what an earlier one wrote, as a reader following the page would):

- python with ``>>>``: doctest, one namespace per file (the tour builds on itself);
- other python: executed (top-level ``await`` allowed); a `title` names what it runs
  against (tests/support/doc_examples.py: an rsocket server started here, the broker, Spark);
- sh: every line that runs ``wirestream`` (or ``.venv/bin/wirestream``) is run, servers
  (``... serve``) in the background on a free port; a ``$ command`` line is a transcript,
  and the lines after it are its output;
- yaml: loaded and validated by the IDL front end (``wirestream.codegen.load_protocol``);
  a fragment is put into a minimal complete IDL (``BASE``) first, its ``{...}`` and
  ``[...]`` placeholders dropped.

``NOT_RUN`` lists the blocks no test runs, each with its reason.
"""

from __future__ import annotations

import ast
import asyncio
import copy
import doctest
import inspect
import os
import re
import shlex
import socket
import subprocess
import sys
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
    SUPER_STREAM,
    Example,
    examples,
    markdown_files,
)

# (file, first line of the block) -> why no test runs it. Keep it short.
NOT_RUN: dict[tuple[str, str], str] = {
    ("docs/install.md", "make demo"): "`make demo` and `make test` are what CI runs",
    ("docs/typescript.md", "import {"): "TypeScript: the same calls run in tests/typescript",
    (
        "docs/diff.md",
        "git fetch",
    ): "needs a remote; `diff --against` runs in tests/codegen/test_diff_cli.py",
    (
        "docs/captures.md",
        ".venv/bin/wirestream capture to-pcap",
    ): "OPEN: to-pcap of a rotated capture",
    (
        "docs/captures.md",
        "tcpdump",
    ): "needs tcpdump's capture; real pcaps: tests/capture/test_pcap.py",
    (
        "docs/captures.md",
        "frames = (spark",
    ): "the same pcap; tests/spark/test_spark_pcap.py reads one",
    # Spark's live sources need a publisher of msgpack ticks and a running query: the
    # same options run in tests/spark/test_spark_rsocket_source.py and test_spark_rabbitmq.py.
    ("docs/spark.md", "ticks = (spark"): "a live msgpack ticker (test_spark_rsocket_source.py)",
    ("docs/spark.md", "events = (spark"): "a streaming query (tests/spark/test_spark_rabbitmq.py)",
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
}
SECTIONS = set(BASE) | {
    "predecessor", "spec", "doc", "byte_order", "startup", "encodings", "context", "enums",
    "structs", "unions", "machines", "frame_log",
}  # fmt: skip

BROKER_URI = "rabbitmq-stream://guest:guest@127.0.0.1:5552/%2f"
WIRESTREAM = re.compile(r"^(?:\.venv/bin/)?wirestream\b|\|\s*(?:\.venv/bin/)?wirestream\b")


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


def validate_yaml(example: Example, tmp_path: Path) -> None:
    from wirestream.codegen import load_protocol

    fragment = without_placeholders(yaml.safe_load(example.code))
    if example.title.startswith("added to idl/"):
        idl = added_to(yaml.safe_load((ROOT / example.title.removeprefix("added to ")).read_text()),
                       fragment)  # fmt: skip
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


def run_python(example: Example, source: str) -> None:
    code = compile(source, example.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace: dict[str, Any] = {"__name__": "__doc_example__"}
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
    """PATH with a `wirestream` that is this checkout's, run by this interpreter."""
    shim = tmp_path / ".bin"
    shim.mkdir(exist_ok=True)
    script = shim / "wirestream"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m wirestream "$@"\n')
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


@contextmanager
def broker_names(source: str, super_stream: bool) -> Iterator[str]:
    """The block with a fresh name for each stream it creates (and for the super stream
    `invoices`, made with three partitions as `rabbitmq-streams add_super_stream` makes it:
    the 3.10 broker has no CreateSuperStream); all deleted afterwards."""
    from tests.support.rabbitmq_broker_ctl import add_super_stream, delete_super_stream
    from tests.support.rabbitmq_stream_client_support import unique
    from wirestream.runtime.rabbitmq_stream.aio import connect

    streams = {
        name: unique(f"doc-{name}") for name in re.findall(r'create_stream\("(\w+)"', source)
    }
    for old, new in streams.items():
        source = source.replace(f'"{old}"', f'"{new}"')
    invoices = unique("doc-invoices")
    if super_stream:
        source = source.replace('"invoices"', f'"{invoices}"')
        add_super_stream(invoices, 3)
    try:
        yield source
    finally:
        if super_stream:
            delete_super_stream(invoices)

        async def delete() -> None:
            async with await connect(BROKER_URI) as client:
                for stream in streams.values():
                    await client.delete_stream(stream, missing_ok=True)

        asyncio.run(delete())


# --- shell -------------------------------------------------------------------------------


def run_shell(example: Example, tmp_path: Path, env: dict[str, str]) -> None:
    idl = tmp_path / "idl"
    if not idl.exists():  # the repository's protocols (read only), beside the page's own
        idl.mkdir()
        for protocol in (ROOT / "idl").iterdir():
            if protocol.is_dir():
                (idl / protocol.name).symlink_to(protocol)
    ports = ports_of(example.code)
    lines = on_ports(example.code, ports).splitlines()
    with ExitStack() as servers:
        i = 0
        while i < len(lines):
            line = lines[i].strip()
            i += 1
            transcript = line.startswith("$ ")
            command = re.sub(r"\s+#.*$", "", line.removeprefix("$ "))
            if not command or command.startswith("#") or not WIRESTREAM.search(command):
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


# --- the tests ---------------------------------------------------------------------------


def run_example(example: Example, tmp_path: Path, globs: dict[str, Any],
                env: dict[str, str], request: pytest.FixtureRequest) -> None:  # fmt: skip
    known = example.title.startswith(("added to ", "idl/")) or all(
        part in PEERS for part in filter(None, example.title.split(", "))
    )
    assert known, f"{example.where}: unknown title {example.title!r}"
    if example.lang == "yaml" and example.title.startswith("idl/"):
        validate_yaml(example, tmp_path)
        (tmp_path / example.title).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / example.title).write_text(example.code, encoding="utf-8")  # the file
    elif example.lang == "yaml" and relative(example.path) == "idl/README.md" and not example.title:
        # OPEN (reported): the reference's untitled fragments are excerpts that name things
        # declared elsewhere; until each gets the IDL it belongs to (a `title="added to
        # idl/..."`), they are only parsed as YAML here.
        assert isinstance(yaml.safe_load(example.code), (dict, list)), example.where
    elif example.lang == "yaml":
        validate_yaml(example, tmp_path)
    elif example.lang == "sh":
        run_shell(example, tmp_path, env)
    elif example.lang == "python":
        source = example.code
        with ExitStack() as stack:
            if example.title.startswith("added to "):
                compile(textwrap.dedent(source), example.where, "exec")  # run where it goes
                return
            if RSOCKET_SERVER in example.title:
                port = str(free_port())
                source = source.replace("127.0.0.1:7878", f"127.0.0.1:{port}")
                stack.enter_context(rsocket_server(env, tmp_path, port))
            if BROKER in example.title or SUPER_STREAM in example.title:
                request.getfixturevalue("rabbitmq_broker")  # started when it is not
                source = stack.enter_context(broker_names(source, SUPER_STREAM in example.title))
            if SPARK in example.title:
                source = "spark = __spark__\n" + source
                globs["__spark__"] = request.getfixturevalue("spark")
            cwd = Path.cwd()
            os.chdir(tmp_path)
            sys.path.insert(0, str(tmp_path))  # what a page generated there imports
            try:
                if source.lstrip().startswith(">>>"):
                    run_doctest(example, globs)
                else:
                    run_python(example, source)
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
