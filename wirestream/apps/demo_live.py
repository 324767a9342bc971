"""`make demo LIVE=1`: the demo's windows drawn in a browser as Spark closes them.

Two loopback servers, in the demo's process:

- the page, over HTTP (``http://127.0.0.1:<port>/``, printed): the static chart's page
  with the live script (demo_chart.render_live_page; demo_web/live.ts), which draws with
  the static chart's own code (demo_web/chart.ts);
- the feed, RSocket over WebSocket (the Python runtime's ``serve("ws://...")``, as
  ``wirestream rsocket serve --transport ws`` serves): a request-stream whose items are
  JSON ``{"windows": [...], "total": n, "final": bool}``, the windows published since
  the subscriber's previous item.

Backpressure.  The demo publishes each micro-batch's closed windows into one shared,
append-only history (``WindowFeed``; at most ``MAX_HISTORY`` windows, the oldest dropped
beyond it) and never waits for a page.  A subscriber holds no buffer of its own, only a
cursor into the history: it is sent an item only when its page has asked for one
(REQUEST_N; the runtime pulls the stream's iterator only under credit), and that item
carries everything from its cursor on, up to ``CHUNK`` windows.  So a page that falls
behind costs nothing while it is behind, and catches up with the latest state in a few
large items instead of many small ones; nothing it has not drawn is dropped unless the
history itself overflowed (then it resumes at the oldest window kept).  When the query
ends, the last item says ``final`` and the stream completes; pages that connect later
get the whole history and ``final`` at once.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from wirestream.apps.demo_chart import Window, render_live_page, window_json
from wirestream.runtime.rsocket.handler import RSocketHandler, RSocketPayload
from wirestream.runtime.spark.background import BackgroundLoop

__all__ = ["CHUNK", "MAX_HISTORY", "LiveChart", "WindowFeed"]

MAX_HISTORY = 100_000
"""Windows the feed keeps (the demo's million trades make ~850): the bound on its memory,
whatever the pages do."""
CHUNK = 1_000
"""Windows in one item at most: the bound on a frame (~100 bytes a window), so a page
catching up gets the history in frames of ~100 KB."""
CLOSE_GRACE = 2.0
"""Seconds a page's connection gets to close cleanly when the demo stops."""
HTTP_TIMEOUT = 10.0
"""Seconds the page server waits on a silent client (a request that never ends)."""


class WindowFeed:
    """The published windows and the streams that follow them; used on one asyncio loop
    (``publish`` and ``finish`` from elsewhere go through ``loop.call_soon_threadsafe``)."""

    def __init__(self, max_history: int = MAX_HISTORY, chunk: int = CHUNK) -> None:
        self._history: list[dict[str, Any]] = []
        self._base = 0  # the offset of _history[0]: how many windows were dropped
        self._max_history = max_history
        self._chunk = chunk
        self._final = False
        self._news = asyncio.Event()
        self.followers = 0
        """Streams following the feed now."""

    @property
    def end(self) -> int:
        """The offset after the last window published: how many were published."""
        return self._base + len(self._history)

    def publish(self, windows: Iterable[dict[str, Any]]) -> None:
        self._history.extend(windows)
        excess = len(self._history) - self._max_history
        if excess > 0:
            del self._history[:excess]
            self._base += excess
        self._wake()

    def finish(self) -> None:
        """No more windows: every stream sends what is left, says ``final`` and ends."""
        self._final = True
        self._wake()

    def _wake(self) -> None:
        # Every waiting stream holds the current event; a new one is made for the next news.
        self._news.set()
        self._news = asyncio.Event()

    async def follow(self) -> AsyncIterator[bytes]:
        """One subscriber's items.  The runtime pulls this iterator only when the
        subscriber has credit, so the cursor is the subscriber's whole state."""
        cursor = 0
        self.followers += 1
        try:
            while True:
                while cursor >= self.end and not self._final:
                    await self._news.wait()
                cursor = max(cursor, self._base)  # behind the history's start: its oldest
                first = cursor - self._base
                windows = self._history[first : first + self._chunk]
                cursor += len(windows)
                final = self._final and cursor >= self.end
                item = {"windows": windows, "total": self.end, "final": final}
                yield json.dumps(item, separators=(",", ":")).encode()
                if final:
                    return
        finally:
            self.followers -= 1


class FeedResponder(RSocketHandler):
    """The feed's RSocket side: every request-stream follows the feed (its data is not
    read: there is one feed)."""

    def __init__(self, feed: WindowFeed) -> None:
        self.feed = feed

    def request_stream(self, payload: RSocketPayload) -> AsyncIterator[bytes]:
        return self.feed.follow()


class LiveChart:
    """The live page and its feed, started on ``background`` (the demo's asyncio thread);
    ``publish`` and ``finish`` are called from the demo's main thread; ``close`` stops
    both servers (idempotent)."""

    def __init__(self, background: BackgroundLoop, title: str, port: int = 0) -> None:
        from wirestream.runtime.rsocket import serve

        self._background = background
        self._published: set[tuple[str, float]] = set()

        async def start() -> tuple[WindowFeed, Any]:
            feed = WindowFeed()  # made on the loop, which its event belongs to
            return feed, await serve("ws://127.0.0.1:0", FeedResponder(feed))

        self._feed, self._rsocket = background.run(start(), timeout=30)
        page = render_live_page(title, self._rsocket.url).encode()
        self._http = ThreadingHTTPServer(("127.0.0.1", port), _page_handler(page))
        self._http.daemon_threads = True
        self._serving = threading.Thread(target=self._http.serve_forever, name="demo page",
                                         daemon=True)  # fmt: skip
        self._serving.start()
        self._closed = False

    @property
    def url(self) -> str:
        """The page's address."""
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}/"

    @property
    def feed_url(self) -> str:
        return str(self._rsocket.url)

    @property
    def followers(self) -> int:
        """Pages following the feed now."""
        return self._feed.followers

    def publish(self, windows: Sequence[Window]) -> int:
        """Publish the windows not published yet (``windows`` may repeat earlier ones: the
        demo passes every window written so far); how many were new."""
        new = [w for w in windows if (w.symbol, w.start.timestamp()) not in self._published]
        self._published.update((w.symbol, w.start.timestamp()) for w in new)
        if new:
            items = [window_json(w) for w in new]
            self._background.call(lambda: self._feed.publish(items))
        return len(new)

    def finish(self) -> None:
        self._background.call(self._feed.finish)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._http.shutdown()
        self._http.server_close()
        if not self._background.closed:
            self._background.run(self._rsocket.shutdown(CLOSE_GRACE), timeout=CLOSE_GRACE + 5)


def _page_handler(page: bytes) -> type[BaseHTTPRequestHandler]:
    class PageHandler(BaseHTTPRequestHandler):
        """``GET /``: the page; anything else: 404."""

        timeout = HTTP_TIMEOUT

        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] not in ("/", "/index.html"):
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the demo prints its own progress; a request log would interleave

    return PageHandler
