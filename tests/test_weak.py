"""Weak block labels from snippets (training/weak.py), on small hand-made pages; the pages tuning takes them from."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bodyblocks.training.cache import CachedPage
from bodyblocks.training.synth import generate_corpus
from bodyblocks.training.weak import (
    BODY,
    MASKED,
    NOT_BODY,
    coverage,
    label_blocks,
    normal,
    occurrences,
    weak_labels,
    weak_tuning_pages,
)
from bodyblocks.types import Block


def blocks(*texts: str) -> list[Block]:
    return [Block(i, t, "p", "html/body/p", f"/html[1]/body[1]/p[{i + 1}]", 2, text_len=len(t))
            for i, t in enumerate(texts)]


def page(texts: list[str], snippets: dict[str, list[str]] | None) -> CachedPage:
    return CachedPage(id="p", dataset="d", lang=None, source_split=None, site="example.org", title="",
                      blocks=blocks(*texts), labels=[0] * len(texts), scores=[0.0] * len(texts), gold=None,
                      snippets=snippets)


def test_normal_form() -> None:
    assert normal("  Ｆｕｌｌ\u00a0WIDTH\nStraße ") == "fullwidthstrasse"
    assert normal("ﬁne  tuning") == "finetuning"  # NFKC ligature, casefold, no white space


def test_with_without_and_masked() -> None:
    texts = ["Home | News | Impressum", "The council voted on Tuesday to close the road.",
             "It reopens in May.", "Share on Twitter"]
    w = weak_labels(page(texts, {"with": ["voted on  tuesday", "REOPENS in may"], "without": ["Impressum"]}))
    assert w.labels.tolist() == [NOT_BODY, BODY, BODY, MASKED]
    assert (w.with_found, w.without_found, w.with_missing, w.without_missing) == (2, 1, 0, 0)
    assert w.labelled == 3


def test_snippet_across_two_blocks_labels_both() -> None:
    texts = ["Menu", "A heading", "the first line of the paragraph", "Footer"]
    w = label_blocks(blocks(*texts), {"with": ["heading The first"], "without": ["menu"]})
    assert w.labels.tolist() == [NOT_BODY, BODY, BODY, MASKED]
    assert ("with", 1, 2) in w.spans


def test_span_limit() -> None:
    texts = ["one", "two", "three", "four"]
    assert occurrences("onetwothreefour", [normal(t) for t in texts], max_span=3) == []
    assert occurrences("onetwothreefour", [normal(t) for t in texts], max_span=4) == [(0, 3)]
    assert occurrences("e T", [normal(t) for t in texts]) == [(0, 1)]  # "on|e t|wo"
    assert occurrences("e", [normal(t) for t in texts]) == [(0, 0), (2, 2)]  # twice in "three": one span
    w = label_blocks(blocks(*texts), {"with": ["onetwothreefour"]}, max_span=3)
    assert (w.labels == MASKED).all() and w.with_missing == 1


def test_empty_blocks_do_not_shift_spans() -> None:
    texts = ["Menu", "   ", "Body text here", ""]
    w = label_blocks(blocks(*texts), {"with": ["body text"], "without": ["menu"]})
    assert w.labels.tolist() == [NOT_BODY, MASKED, BODY, MASKED]


def test_both_is_masked_and_counted() -> None:
    texts = ["Read more about the election results", "Other"]
    w = label_blocks(blocks(*texts), {"with": ["election results"], "without": ["Read more"]})
    assert w.labels.tolist() == [MASKED, MASKED]
    assert w.conflicts == 1


def test_ambiguous_with_labels_nothing_but_without_labels_every_place() -> None:
    texts = ["Breaking: storm hits coast", "Storm hits coast, says the agency.", "Newsletter", "newsletter"]
    w = label_blocks(blocks(*texts), {"with": ["storm hits coast"], "without": ["Newsletter"]})
    assert w.labels.tolist() == [MASKED, MASKED, NOT_BODY, NOT_BODY]
    assert w.with_ambiguous == 1 and w.without_found == 1


def test_no_snippets_and_coverage() -> None:
    none = weak_labels(page(["a", "b"], None))
    assert none.labels.dtype == np.int8 and (none.labels == MASKED).all()
    some = weak_labels(page(["Body text", "Imprint", "x"], {"with": ["body"], "without": ["imprint", "gone"]}))
    only_body = label_blocks(blocks("Body"), {"with": ["body", "missing"], "without": [""]})
    cov = coverage([none, some, only_body])
    assert cov["pages"] == 3 and cov["pages_labelled"] == 2 and cov["pages_both"] == 1
    assert (cov["blocks"], cov["labelled"], cov["body"], cov["not_body"]) == (6, 3, 2, 1)
    assert (cov["with_found"], cov["with_missing"], cov["without_found"], cov["without_missing"]) == (2, 1, 1, 1)


def _snippet_dataset(root: Path) -> None:
    """A synthetic corpus with snippets and no gold text; two pages from a held-out source's site, two in the
    test split."""
    generate_corpus(root / "snip", pages=10, seed=3)
    generate_corpus(root / "held", pages=2, seed=4)
    held_url = json.loads((root / "held" / "pages.jsonl").read_text(encoding="utf-8").splitlines()[0])["url"]
    records = [json.loads(line) for line in (root / "snip" / "pages.jsonl").read_text(encoding="utf-8").splitlines()]
    for i, rec in enumerate(records):
        rec["gold"] = None
        rec["split"] = "test" if i in (2, 3) else "train"
        rec["lang"] = "zh" if i % 2 else "en"
        if i in (0, 1):
            rec["url"] = held_url.rsplit("/", 1)[0] + f"/other-{i}.html"
    (root / "snip" / "pages.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_weak_tuning_pages_are_the_train_and_val_pages_with_both_labels_less_held_out_sites(tmp_path: Path) -> None:
    from bodyblocks.config import DataConfig
    from bodyblocks.training.cache import load_cached

    _snippet_dataset(tmp_path)
    data = DataConfig(root=str(tmp_path), cache_dir=str(tmp_path / "cache"))
    pages = weak_tuning_pages(data, ["snip"], exclude=["held"])
    ids = {cp.id for cp in pages}
    assert ids and not ids & {"synth-3-0000", "synth-3-0001", "synth-3-0002", "synth-3-0003"}
    assert {cp.id for cp in weak_tuning_pages(data, ["snip"])} >= {"synth-3-0000", "synth-3-0001"}  # nothing held out
    cached = {cp.id: cp for cp in load_cached(tmp_path / "snip", data.cache_dir)}
    for cp in pages:
        assert cp.labels == weak_labels(cached[cp.id]).labels.tolist() and {0, 1} <= set(cp.labels)
        assert cp.blocks == cached[cp.id].blocks and cp.gold is None
    langs = {cp.lang for cp in pages}
    assert len(langs) > 1  # the corpus mixes languages: the filter has something to leave out
    one = sorted(x for x in langs if x)[0]
    assert {cp.lang for cp in weak_tuning_pages(DataConfig(root=data.root, cache_dir=data.cache_dir, languages=[one]),
                                                ["snip"], exclude=["held"])} == {one}
    with pytest.raises(FileNotFoundError):
        weak_tuning_pages(data, ["snip"], exclude=["no-such-source"])
    with pytest.warns(UserWarning, match="no-such-dataset"):
        assert weak_tuning_pages(data, ["no-such-dataset"]) == []
