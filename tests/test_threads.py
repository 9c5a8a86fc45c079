"""A fresh extractor used from several threads at once: the lazily opened ONNX Runtime sessions open once, and
every thread gets the answer one thread alone gets."""

from __future__ import annotations

import threading

import pytest

import bodyblocks
from bodyblocks.classify.onnx_model import runtime_installed
from bodyblocks.extraction.extractor import BlockExtractor

THREADS = 8
ROUNDS = 3
_PAGE = ("<html><head><title>Rivers in spring</title></head><body><nav><a href='/'>Home</a> <a href='/a'>About</a>"
         "</nav><article><h1>Rivers in spring</h1>"
         + "".join(f"<p>Paragraph {i}: the river rose by a metre overnight, and the ferry stopped running until the "
                   "water went down again in the afternoon.</p>" for i in range(8))
         + "</article><footer>Contact us</footer></body></html>")


def _run_at_once(extractor: BlockExtractor) -> tuple[list[str], list[BaseException]]:
    barrier = threading.Barrier(THREADS)
    texts: list[str] = []
    errors: list[BaseException] = []

    def one() -> None:
        barrier.wait()
        try:
            texts.append(extractor.extract(_PAGE).text)
        except BaseException as e:  # noqa: BLE001 - collected for the assertion
            errors.append(e)

    threads = [threading.Thread(target=one) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return texts, errors


@pytest.mark.skipif(not runtime_installed(), reason="onnxruntime is not installed")
def test_a_fresh_extractor_from_eight_threads_at_once_answers_every_call_alike() -> None:
    alone = bodyblocks.load().extract(_PAGE).text
    assert alone
    for _ in range(ROUNDS):
        texts, errors = _run_at_once(bodyblocks.load())  # a fresh one: its sessions open on these first calls
        assert errors == []
        assert texts == [alone] * THREADS
