/**
 * Runs a page in a real headless Chromium (Debian's `chromium`, `make chromium`) through
 * playwright-core (pinned in package.json; it downloads no browser) and prints what the
 * page reports: the pytest tests that need a browser (tests/typescript/test_package.py,
 * test_browser_rsocket.py, tests/project/test_demo_chart.py) run
 *
 *   node tests/typescript/dist/browser.js <folder> <page>[?query] [--screenshot out.png]
 *                                         [--evaluate probe.js]
 *
 * A page given as a full URL (`http://127.0.0.1:<port>/`, e.g. the live chart `make demo
 * LIVE=1` serves itself) is loaded from there instead (the folder is not served from).
 *
 * The folder's files are served over HTTP on 127.0.0.1 (a port of its own, as a dev
 * server would: no file:// restrictions on modules and workers, and Chromium's local
 * network access checks let a loopback page open a WebSocket to 127.0.0.1, which a
 * page the browser cannot place -- a routed one -- may not). The page sets
 * `window.wirestreamResult` (any JSON) when it is done, or `window.wirestreamError`; or,
 * for a page that knows nothing of tests (the demo's chart), `--evaluate` names a file
 * whose expression is evaluated in the page once it has loaded, and its value is the
 * result. The result is printed as JSON on stdout with the page's console errors and uncaught
 * exceptions, and the exit code is 1 when the page failed or timed out.
 *
 * A page that needs the test to act at a point of its run (cut its connection) calls
 * `await wirestreamSignal(what)`: `{"signal": what}` is printed on a line of its own at
 * once, and the call returns the next line the test writes on stdin. The report is
 * always the last line.
 */

import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { extname, join, normalize } from "node:path";
import { createInterface, type Interface } from "node:readline";

import { chromium, type Page } from "playwright-core";

const TIMEOUT_MS = Number(process.env["WIRESTREAM_BROWSER_TIMEOUT_MS"] ?? 60_000);
const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".json": "application/json",
  ".css": "text/css",
  ".png": "image/png",
};

/** Debian's chromium (or CHROMIUM): playwright-core is only the driver. */
export function chromiumPath(): string {
  return process.env["CHROMIUM"] ?? "/usr/bin/chromium";
}

interface Report {
  result: unknown;
  error: string | null;
  console: string[];
}

async function main(argv: string[]): Promise<number> {
  const [folder, page, ...rest] = argv;
  if (folder === undefined || page === undefined) {
    console.error("usage: browser.js <folder> <page>[?query] [--screenshot out.png]");
    return 2;
  }
  const at = rest.indexOf("--screenshot");
  const screenshot = at >= 0 ? rest[at + 1] : undefined;
  const probeAt = rest.indexOf("--evaluate");
  const probe = probeAt >= 0 ? await readFile(rest[probeAt + 1]!, "utf8") : undefined;
  const server = createServer((request, response) => {
    const path = normalize(decodeURIComponent(new URL(request.url ?? "/", "http://x").pathname));
    if (path.includes("..")) {
      response.writeHead(403).end();
      return;
    }
    readFile(join(folder, path)).then(
      (body) => {
        const type = TYPES[extname(path)] ?? "application/octet-stream";
        response.writeHead(200, { "content-type": type }).end(body);
      },
      () => response.writeHead(404).end(`no ${path}`),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const browser = await chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    // Root in a container has no user namespace sandbox; the pages are the tests' own.
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  const report: Report = { result: null, error: null, console: [] };
  try {
    const context = await browser.newContext({
      viewport: { width: 1200, height: 900 },
      deviceScaleFactor: 1,
    });
    const tab = await context.newPage();
    tab.on("console", (message) => {
      if (message.type() === "error") report.console.push(message.text());
    });
    tab.on("pageerror", (error) => report.console.push(`uncaught: ${error.message}`));
    await tab.exposeFunction("wirestreamSignal", signal);
    await tab.goto(/^https?:\/\//.test(page) ? page : origin + page);
    if (probe !== undefined) {
      report.result = await tab.evaluate(probe);
    } else {
      await waitForResult(tab, report);
    }
    if (screenshot !== undefined) {
      await tab.screenshot({ path: screenshot, fullPage: true });
    }
  } catch (error) {
    report.error = String(error);
  } finally {
    await browser.close();
    server.close();
    lines?.close();
  }
  process.stdout.write(JSON.stringify(report) + "\n");
  return report.error === null && report.console.length === 0 ? 0 : 1;
}

let stdin: AsyncIterator<string> | null = null;
let lines: Interface | null = null;

/** The page's `wirestreamSignal(what)`: tell the test, return its answer. stdin is read
 * only once a page signals (the other pages' tests give none). */
async function signal(what: string): Promise<string> {
  process.stdout.write(JSON.stringify({ signal: what }) + "\n");
  if (lines === null) {
    lines = createInterface({ input: process.stdin });
    stdin = lines[Symbol.asyncIterator]();
  }
  const answer = await stdin!.next();
  if (answer.done === true) throw new Error(`stdin ended before the answer to ${what}`);
  return answer.value;
}

/** Wait for the page's `wirestreamResult` or `wirestreamError`. */
async function waitForResult(tab: Page, report: Report): Promise<void> {
  await tab.waitForFunction(
    () => {
      const w = globalThis as { wirestreamResult?: unknown; wirestreamError?: unknown };
      return w.wirestreamResult !== undefined || w.wirestreamError !== undefined;
    },
    undefined,
    { timeout: TIMEOUT_MS },
  );
  const [result, error] = await tab.evaluate(() => {
    const w = globalThis as { wirestreamResult?: unknown; wirestreamError?: unknown };
    return [w.wirestreamResult ?? null, w.wirestreamError ?? null] as const;
  });
  report.result = result;
  report.error = error === null ? null : String(error);
}

process.exitCode = await main(process.argv.slice(2));
