"""RSocket in a real browser: a page bundled from ``@wirestream/generated`` (the pinned
esbuild) runs in headless Chromium (Debian's, ``make chromium``; driven by
``browser.ts``) and talks to the Python server, ``wirestream rsocket serve --transport
ws``, over the browser's own WebSocket: SETUP, a request-response and a request-stream
paced by REQUEST_N, every frame through the generated machines (pages/rsocket_ws.mjs).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.typescript_support import ROOT, run

PAGE = ROOT / "tests" / "typescript" / "pages" / "rsocket_ws.mjs"
ESBUILD = ROOT / "node_modules" / ".bin" / "esbuild"
BROWSER = ROOT / "tests" / "typescript" / "dist" / "browser.js"


@pytest.fixture
def ws_server() -> Iterator[int]:
    """``wirestream rsocket serve --transport ws --port 0``; yields the port it printed."""
    server = subprocess.Popen(
        [sys.executable, "-m", "wirestream", "rsocket", "serve", "--transport", "ws",
         "--host", "127.0.0.1", "--port", "0"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        found = re.search(r"listening on ws://[^\s]*:(\d+)", line)
        assert found is not None, f"the server did not say where it listens: {line!r}"
        yield int(found.group(1))
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_request_response_and_stream_from_chromium(
    node: str, ws_server: int, tmp_path: Path
) -> None:
    run([str(ESBUILD), str(PAGE), "--bundle", "--format=esm", "--platform=browser",
         f"--outfile={tmp_path / 'page.js'}"], "esbuild pages/rsocket_ws.mjs")  # fmt: skip
    (tmp_path / "index.html").write_text(
        '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><script type="module" src="page.js"></script>\n'
    )
    report = json.loads(
        run([node, str(BROWSER), str(tmp_path), f"index.html?port={ws_server}"], "Chromium")
    )
    assert report["error"] is None and report["console"] == [], report
    result = report["result"]
    assert result["response"] == {
        "isPayload": True,
        "streamId": 1,
        "data": "hello from chromium",
        "complete": True,
        "state": "closed",
    }
    stream = result["stream"]
    assert stream["items"] == [str(i) for i in range(10)]
    # 3 initial credits, then REQUEST_N 4 and 3: each batch is exactly the credit granted
    # (the page checked that nothing came early); the last grant finds the stream done.
    assert stream["batches"] == [3, 4, 3] and stream["complete"] is True, stream
    assert stream["state"] == "closed", stream
