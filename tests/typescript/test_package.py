"""The two npm packages as a web developer gets them: ``npm pack`` of
``@wirestream/runtime`` and ``@wirestream/generated``, both tarballs installed into an
empty project, then used from there as ESM, through ``require()`` (CommonJS), by
``tsc --strict`` against the DOM's types, and bundled for the browser by the pinned
esbuild (``--minify``) into a page that headless Chromium runs (``browser.ts``).

What it proves (issue 29, item 4): the tarballs carry every file their ``exports`` name;
the generated package's dependency on the runtime is met by the runtime's tarball; names
in messages survive minifying (static ``NAME``s, not ``constructor.name``); RSocket's
ERROR frame (``ErrorFrame``) does not shadow the global ``Error``; byte fields are
``Uint8Array<ArrayBuffer>`` for DOM APIs; a pooled ``encode()`` posted to a Worker with
its buffer transferred leaves later encodes working; and a one-frame bundle keeps one
frame class and no MessagePack (its size is printed: ``pytest -s``).
"""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest

from tests.support.typescript_support import ROOT, run

HERE = Path(__file__).parent / "package"
ESBUILD = ROOT / "node_modules" / ".bin" / "esbuild"
TSC = ROOT / "node_modules" / ".bin" / "tsc"
BROWSER = ROOT / "tests" / "typescript" / "dist" / "browser.js"
PACKAGES = {
    "@wirestream/runtime": "runtime/typescript",
    "@wirestream/generated": "generated/typescript",
    "@wirestream/rsocket": "runtime/typescript/rsocket",
}

# What checks.mjs must see wherever it runs (ESM, CommonJS, minified in Chromium).
EXPECTED = {
    "requestN": [0, 0, 0, 5, 0x20, 0, 0, 0, 0, 64],
    "errorOwned": True,
    "decoded": {"name": "Error", "isErrorFrame": True, "code": 1, "data": "no"},
    "errorIsNotGlobal": True,
    "trailing": {
        "name": "TrailingBytes",
        "message": "1 bytes after the end of a RequestN",
        "isTrailingBytes": True,
    },
    "encodeIsPooled": True,
}


def npm() -> str:
    found = shutil.which("npm")
    assert found is not None, "npm is not installed (Debian: apt-get install npm)"
    return found


@pytest.fixture(scope="module")
def app(node: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty project with both tarballs installed (and nothing else of this repo)."""
    base = tmp_path_factory.mktemp("pack")
    packs = base / "packs"
    packs.mkdir()
    out = run([npm(), "pack", "--json", "--pack-destination", str(packs),
               *(f"--workspace={folder}" for folder in PACKAGES.values())], "npm pack")  # fmt: skip
    packed = {entry["name"]: entry for entry in json.loads(out)}
    assert sorted(packed) == sorted(PACKAGES)
    for name, folder in PACKAGES.items():
        manifest = json.loads((ROOT / folder / "package.json").read_text(encoding="utf-8"))
        assert "private" not in manifest, f"{name} is private: npm would refuse to publish it"
        files = {entry["path"] for entry in packed[name]["files"]}
        targets = [target for conditions in manifest["exports"].values()
                   for target in conditions.values()]  # fmt: skip
        missing = sorted(t.removeprefix("./") for t in targets if t.removeprefix("./") not in files)
        assert not missing, f"{name}'s tarball lacks what its exports name: {missing}"
        assert not [f for f in files if f.endswith(".tsbuildinfo")], f"{name} ships tsbuildinfo"
    generated = json.loads((ROOT / "generated/typescript/package.json").read_text(encoding="utf-8"))
    runtime = json.loads((ROOT / "runtime/typescript/package.json").read_text(encoding="utf-8"))
    assert generated["dependencies"]["@wirestream/runtime"] == runtime["version"]
    project = base / "app"
    project.mkdir()
    (project / "package.json").write_text('{"name": "consumer", "private": true}\n')
    tarballs = [str(packs / packed[name]["filename"]) for name in PACKAGES]
    # --prefer-offline: @msgpack/msgpack (the runtime's one dependency) comes from the
    # cache `npm ci` filled, as package-lock.json pins it.
    run([npm(), "install", "--no-audit", "--no-fund", "--prefer-offline", *tarballs],
        "npm install of the tarballs", cwd=project)  # fmt: skip
    for name in ("checks.mjs", "consume.mjs", "consume.cjs", "page.mjs", "one_frame.mjs", "dom.ts"):
        shutil.copy(HERE / name, project / name)
    with tarfile.open(tarballs[1]) as tar:
        assert "package/dist/rsocket/v1_0/index.js" in tar.getnames()
    return project


def machine_errors_named(result: dict[str, object]) -> None:
    """The IllegalSend / UnexpectedFrame fields name the frames by their Python names."""
    send = result["illegalSend"]
    assert isinstance(send, dict) and send["name"] == "IllegalSend", send
    assert send["frame"] == "RequestN" and " RequestN when " in send["message"], send
    unexpected = result["unexpected"]
    assert isinstance(unexpected, dict) and unexpected["name"] == "UnexpectedFrame", unexpected
    assert unexpected["frame"] == "Error" and " Error when " in unexpected["message"], unexpected


def check(result: dict[str, object]) -> None:
    for key, value in EXPECTED.items():
        assert result[key] == value, f"{key}: {result[key]!r} != {value!r}"
    machine_errors_named(result)


def test_esm_consumer(node: str, app: Path) -> None:
    check(json.loads(run([node, "consume.mjs"], "node consume.mjs", cwd=app)))


def test_commonjs_consumer(node: str, app: Path) -> None:
    check(json.loads(run([node, "consume.cjs"], "node consume.cjs", cwd=app)))


def test_byte_fields_type_check_against_dom_apis(node: str, app: Path) -> None:
    options = {"strict": True, "noEmit": True, "target": "ES2022", "lib": ["ES2022", "DOM"],
               "module": "NodeNext", "moduleResolution": "NodeNext", "types": []}  # fmt: skip
    config = {"compilerOptions": options, "files": ["dom.ts"]}
    (app / "tsconfig.json").write_text(json.dumps(config, indent=2) + "\n")
    run([node, str(TSC), "-p", "tsconfig.json"],
        "tsc --strict dom.ts (Blob, crypto.subtle.digest, fetch body)", cwd=app)  # fmt: skip


def bundle(node: str, app: Path, entry: str, out: Path) -> str:
    run([str(ESBUILD), entry, "--bundle", "--minify", "--format=esm", "--platform=browser",
         f"--outfile={out}"], f"esbuild {entry}", cwd=app)  # fmt: skip
    return out.read_text(encoding="utf-8")


def test_the_rsocket_client_bundles_for_the_browser(node: str, app: Path, tmp_path: Path) -> None:
    """``@wirestream/rsocket``'s browser entry (the global WebSocket) bundles from its
    tarball with no Node module; ``/node`` is the Node entry (TCP, ``ws``)."""
    (app / "client.mjs").write_text(
        'import { connect } from "@wirestream/rsocket";\nglobalThis.connect = connect;\n'
    )
    text = bundle(node, app, "client.mjs", tmp_path / "client.js")
    assert "node:" not in text and "WebSocket" in text


def test_minified_browser_bundle_in_chromium(node: str, app: Path, tmp_path: Path) -> None:
    text = bundle(node, app, "page.mjs", tmp_path / "page.js")
    assert "node:" not in text, "the browser bundle imports a Node module"
    (tmp_path / "index.html").write_text(
        '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><script type="module" src="page.js"></script>\n'
    )
    done = run([node, str(BROWSER), str(tmp_path), "index.html"], "the bundle in Chromium")
    report = json.loads(done)
    assert report["console"] == [] and report["error"] is None, report
    result = report["result"]
    check(result)
    expected = result["expected"]
    assert expected == [0, 0, 0, 7, 0x20, 0, 0, 0, 0, 3]
    assert result["workerGot"] == expected and result["detached"] is True
    assert result["afterTransfer"] == expected, "encode() broke once a slab was transferred"
    assert result["ownedWorkerGot"] == expected and result["pooledStillFine"] == expected


def test_one_frame_bundle_keeps_one_frame(node: str, app: Path, tmp_path: Path) -> None:
    text = bundle(node, app, "one_frame.mjs", tmp_path / "one.js")
    print(f"\none-frame bundle (RequestN, esbuild --minify): {len(text.encode())} bytes")
    kept = [name for name in ("Setup", "RequestStream", "Payload", "Keepalive", "Lease")
            if f'"{name}"' in text]  # fmt: skip
    assert '"RequestN"' in text and not kept, f"frame classes kept beyond RequestN: {kept}"
    assert "msgpack" not in text.lower() and "Encoder(" not in text, "MessagePack was bundled"
