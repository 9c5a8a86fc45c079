"""Pages/s of headless capture with 1 and 2 browsers, on pages served from 127.0.0.1 by this script.

Each page is news-like: a static shell (navigation, footer) whose body paragraphs a script inserts 100 ms after
parsing, as on the JavaScript-built pages capture exists for. Browser start-up is inside the timing (a batch
pays it too); the politeness delay is 0 because every page comes from one host. These machines are noisy, so
each setting runs --rounds times, alternating, and the best round is reported beside all rounds.

    nice -n 10 python -m benchmarks.capture_bench --pages 40
    nice -n 10 python -m benchmarks.capture_bench --pages 40 --wait 0   # no settle time: raw browser speed
"""

from __future__ import annotations

import argparse
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from bodyblocks.capture import capture

SHELL = """<!doctype html><html><head><meta charset="utf-8"><title>Story {n}</title>
<style>nav a {{ margin: 0 4px }} article p {{ line-height: 1.5 }}</style></head>
<body><nav>{links}</nav><h1>Story {n}</h1><article id="body"></article>
<footer><p>Copyright, contact, privacy policy, terms of use.</p></footer>
<script>setTimeout(function () {{
  const body = document.getElementById("body");
  for (let i = 0; i < 12; i++) {{
    const p = document.createElement("p");
    p.textContent = "Paragraph " + i + " of story {n}. " + "{sentence}".repeat(6);
    body.appendChild(p);
  }}
}}, 100);</script></body></html>"""
SENTENCE = "The council voted on the budget after a long debate about schools and roads. "


class _Pages(BaseHTTPRequestHandler):
    """Serves /story/N for any N."""

    def log_message(self, format: str, *args: object) -> None:
        return

    def do_GET(self) -> None:
        n = self.path.rsplit("/", 1)[-1]
        links = "".join(f'<a href="/story/{i}">Section {i}</a>' for i in range(30))
        body = SHELL.format(n=n, links=links, sentence=SENTENCE).encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def run_once(urls: list[str], concurrency: int, wait: float) -> tuple[float, int]:
    """Seconds for one capture of all URLs, and how many came back ok with their script-built body."""
    start = time.perf_counter()
    pages = list(capture(urls, concurrency=concurrency, wait=wait, politeness=0.0, timeout=30.0))
    seconds = time.perf_counter() - start
    return seconds, sum(p.ok and "Paragraph 11 of story" in p.html for p in pages)


def main() -> None:
    """Serve the pages, time each concurrency, print pages/s."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--concurrency", default="1,2", help="comma-separated browser counts")
    parser.add_argument("--wait", type=float, default=0.5, help="settle seconds per page (capture's default)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    urls = [f"http://127.0.0.1:{server.server_address[1]}/story/{i}" for i in range(args.pages)]
    levels = [int(c) for c in args.concurrency.split(",")]
    rounds: dict[int, list[tuple[float, int]]] = {c: [] for c in levels}
    for _ in range(args.rounds):
        for c in levels:
            rounds[c].append(run_once(urls, c, args.wait))
    server.shutdown()

    print(f"{args.pages} local pages, settle wait {args.wait:g} s, browser start-up included")
    print(f"{'browsers':>8}  {'pages/s':>8}  {'seconds':>8}  {'ok':>5}  all rounds (pages/s)")
    for c in levels:
        best_s, best_ok = min(rounds[c])
        every = ", ".join(f"{args.pages / s:.2f}" for s, _ in rounds[c])
        print(f"{c:>8}  {args.pages / best_s:>8.2f}  {best_s:>8.1f}  {best_ok:>9}  {every}")


if __name__ == "__main__":
    main()
