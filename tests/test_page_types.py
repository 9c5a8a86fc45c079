"""benchmarks/page_types.py: WCXB's word F1 per page, and the table per page type, on synthetic pages."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from benchmarks import page_types
from benchmarks.page_types import Cached, report, type_table, word_f1

from bodyblocks.extraction.decision import DecisionRule
from bodyblocks.page.segment import segment
from bodyblocks.training.splits import load_split_ids


def test_word_f1_is_wcxbs_bag_of_lower_cased_words() -> None:
    assert word_f1("The cat sat.", "the CAT sat") == 1.0
    # gold: the cat sat on the mat (6 words); extraction: the cat ran (3): 2 in common
    assert word_f1("The cat sat on the mat", "the cat ran") == pytest.approx(2 * (2 / 3) * (2 / 6) / (2 / 3 + 2 / 6))
    assert word_f1("a b a", "a a a") == pytest.approx(2 * (2 / 3) * (2 / 3) / (4 / 3))  # bags: "a" twice in common
    assert word_f1("", "") == 1.0 and word_f1("  ", "words") == 0.0  # an empty gold, as WCXB scores it
    assert word_f1("some words", "") == 0.0


class _Runs:
    """The default's P(body) given by hand: 0.9 for the blocks holding "Body", else 0.1; trafilatura's text fixed."""

    def ours(self, dataset: str, page: object) -> Cached:
        doc = segment(page.html)  # type: ignore[attr-defined]
        return Cached(doc, np.array([0.9 if "Body" in b.text else 0.1 for b in doc.blocks], np.float32))

    def peer(self, dataset: str, page: object) -> str:
        return "Body text of the page"


def _dataset(root: Path) -> list[str]:
    """A wcxb-dev folder of two val pages (ids from the project's split lists): an article and a listing."""
    ids = sorted(load_split_ids("wcxb-dev", "val"))[:2]
    folder = root / "wcxb-dev"
    (folder / "html").mkdir(parents=True)
    (folder / "gold").mkdir()
    records = []
    for page_id, kind in zip(ids, ("article", "listing"), strict=True):
        html = ("<html><body><nav><p>Menu of the site, with links</p></nav><main><p>Body text of the page "
                f"{page_id}</p></main></body></html>")
        (folder / "html" / f"{page_id}.html.gz").write_bytes(gzip.compress(html.encode()))
        (folder / "gold" / f"{page_id}.txt").write_text(f"Body text of the page {page_id}", encoding="utf-8")
        records.append({"id": page_id, "url": None, "lang": "en", "split": "dev", "html": f"html/{page_id}.html.gz",
                        "gold": f"gold/{page_id}.txt", "snippets": None, "page_type": kind, "labels": None,
                        "note": None})
    (folder / "pages.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return ids


def test_the_table_scores_each_page_type_and_all_pages(tmp_path: Path) -> None:
    ids = _dataset(tmp_path)
    rule = DecisionRule(0.5, 0.5)
    table = type_table(tmp_path, _Runs(), ["val"], {"bodyblocks": rule})  # type: ignore[arg-type]
    assert set(table) == {"bodyblocks", page_types.PEER}
    assert table["bodyblocks"]["article"] == [1.0] and table["bodyblocks"]["listing"] == [1.0]
    # trafilatura's fixed text lacks the page's id ("wcxb-0013": two words): 5 of 7 gold words, precision 1
    assert table[page_types.PEER]["article"] == [pytest.approx(2 * (5 / 7) / (1 + 5 / 7))]
    assert type_table(tmp_path, _Runs(), ["test"], {"bodyblocks": rule})["bodyblocks"] == {}  # type: ignore[arg-type]
    text = report(table, {"bodyblocks": {"dragnet": 0.9}}, ["val"], "val", "python -m benchmarks.page_types")
    assert "| article | 1 | 1.0000 | 0.8333 |" in text and "| **all** | 2 | **1.0000** | **0.8333** |" in text
    assert "| dragnet | 0.9000 |" in text and ids[0] not in text
