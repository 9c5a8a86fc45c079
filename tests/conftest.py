"""Shared fixtures: where the shared datasets live (tests that need them skip when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bodyblocks.runtime.files import datasets_root

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing may come from the Hugging Face hub, here or in CI
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    root = datasets_root()
    if root is None or not (root / "README.md").exists():
        pytest.skip("../shared/datasets is absent (set BODYBLOCKS_DATASETS to run dataset tests)")
    return root


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread() -> None:
    """Two cores, shared: torch's thread pool fights itself (a tiny step took 60x longer with 2 threads)."""
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)


@pytest.fixture
def local_site():  # noqa: ANN201 - yields a function
    """A function that serves `respond(path) -> (status, html)` over HTTP on 127.0.0.1 and returns its base URL;
    every GET path is appended to its `hits`. The servers stop when the test ends."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    servers = []

    def start(respond):  # noqa: ANN001, ANN202
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                start.hits.append(self.path)
                status, html = respond(self.path)
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.end_headers()
                self.wfile.write(html.encode("utf-8"))

            def log_message(self, *args: object) -> None:
                pass

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}"

    start.hits = []
    yield start
    for httpd in servers:
        httpd.shutdown()
