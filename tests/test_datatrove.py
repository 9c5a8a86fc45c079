"""bodyblocks as a datatrove step: the same body text as bodyblocks' own extraction, in a datatrove pipeline."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

pytest.importorskip("datatrove")

from datatrove.data import Document  # noqa: E402

from bodyblocks import get_extractor  # noqa: E402
from bodyblocks.scale.datatrove_step import BodyblocksExtractor  # noqa: E402
from bodyblocks.training.synth import synth_page  # noqa: E402


def pages(n: int) -> list[bytes]:
    rng = random.Random(5)
    return [synth_page(rng, encoding="utf-8")[0] for _ in range(n)]


def test_the_step_gives_bodyblocks_text_and_drops_documents_without_any() -> None:
    html = pages(1)[0].decode("utf-8")
    docs = [Document(text=html, id="page"), Document(text="", id="empty"),
            Document(text="<html><head><title>App</title></head><body><script>run()</script></body></html>",
                     id="no-body")]
    out = list(BodyblocksExtractor(timeout=60).run(iter(docs)))
    assert [d.id for d in out] == ["page"]
    assert out[0].text == get_extractor("ensemble").extract(html).text
    assert out[0].text


def test_in_a_datatrove_pipeline_after_its_reader(tmp_path: Path) -> None:
    import json

    from datatrove.pipeline.readers import JsonlReader

    bodies = [b.decode("utf-8") for b in pages(3)]
    with open(tmp_path / "pages.jsonl", "w", encoding="utf-8") as fh:
        for i, html in enumerate(bodies):
            fh.write(json.dumps({"id": f"p{i}", "text": html, "url": f"http://example.org/{i}"}) + "\n")
    out = list(BodyblocksExtractor(timeout=60).run(JsonlReader(str(tmp_path)).run()))
    extractor = get_extractor("ensemble")
    assert [d.id for d in out] == ["p0", "p1", "p2"]
    assert [d.text for d in out] == [extractor.extract(html).text for html in bodies]
