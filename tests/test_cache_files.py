"""benchmarks/cache_files.py: the benchmarks' caches are gzipped JSON that give back exactly what was stored, and no
benchmark stores anything with pickle."""

from __future__ import annotations

import ast
import gzip
import json
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from benchmarks.cache_files import parts_file, read_cached, write_cached

from bodyblocks.extraction.extractor import segment_page

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
PAGE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Harbour wall | The Coast Times</title>
<meta property="og:type" content="article"><meta property="og:site_name" content="The Coast Times">
<meta name="description" content="The council votes on the harbour wall.">
<meta name="author" content="Ann Smith"><link rel="canonical" href="/news/harbour-wall">
<script type="application/ld+json">{"@type": "NewsArticle", "datePublished": "2024-05-02"}</script></head>
<body><nav><a href="/">Home</a> <a href="/news">News</a></nav><article><h1>The harbour wall</h1>
<p>By <strong>Ann Smith</strong></p>
<p>The council will vote on the <a href="/budget">new harbour wall budget</a> next week, after the storm.</p>
<p>Fishermen said the old wall had cracked in three places during the winter, and repairs were overdue.</p>
</article><footer>&copy; 2024 The Coast Times</footer></body></html>"""


def same(a: Any, b: Any, where: str = "value") -> None:
    """a and b equal down to their types (tuples stay tuples, arrays keep dtype and shape, NaN is NaN)."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), where
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), where
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{where}[{i}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            same(a[k], b[k], f"{where}[{k!r}]")
    elif is_dataclass(a):
        for f in fields(a):
            same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    else:
        assert a == b, where


def test_a_fold_part_comes_back_as_it_was_stored(tmp_path: Path) -> None:
    """A page as loso_blend's fold_parts keeps it: its segmented Document (blocks, marks, metadata, the vote in
    extra), P(body) arrays and the gold."""
    doc = segment_page(PAGE, voting=True, marks=True)
    assert {"metadata", "heuristic"} <= set(doc.extra) and any(b.marks for b in doc.blocks)
    probs = np.linspace(0.0, 1.0, len(doc.blocks), dtype=np.float32) / 3
    pages = [{"id": "p", "lang": "en", "gold": "The council will vote.", "doc": doc, "model": probs,
              "gbt": probs.astype(np.float64), "vote": doc.extra["heuristic"]},
             {"id": "bad", "lang": None, "gold": None, "doc": None}]
    path = parts_file(tmp_path, "dragnet")
    write_cached(path, pages)
    assert path == tmp_path / "parts" / "dragnet.json.gz"
    same(pages, read_cached(path))


def test_grid_and_score_caches_keep_tuple_keys_nan_and_arrays(tmp_path: Path) -> None:
    grid = {"rule": {"version": 3, "made": [("a", 1, 2)]},
            "scores": {(0.2, 0.0, 0.45, 0.6, 0.0): {"wcxb-dev": (0.81, 0.5), "daniel": None},
                       (0.1, 0.3, 0.5, 0.6, 0.7): {"wcxb-dev": (float("nan"), float("inf"))}},
            "pages": {"dragnet": (np.array([0.5, np.nan, -np.inf], np.float64), np.arange(3, dtype=np.int64))},
            "scalars": [np.float32(0.1), np.int64(7), np.bool_(True)]}
    write_cached(tmp_path / "grid.json.gz", grid)
    same(grid, read_cached(tmp_path / "grid.json.gz"))


def test_the_file_is_plain_json(tmp_path: Path) -> None:
    write_cached(tmp_path / "c.json.gz", {"key": (1, "a"), "a": np.ones(2, np.float32)})
    data = json.loads(gzip.decompress((tmp_path / "c.json.gz").read_bytes()))
    assert data == {"key": {"__tuple__": [1, "a"]}, "a": {"__ndarray__": "<f4", "shape": [2], "values": [1.0, 1.0]}}


@pytest.mark.parametrize("value", [object(), {"x": np.array(["a"], dtype=object)}, {1: lambda: 0}])
def test_a_value_with_no_plain_form_is_refused_and_nothing_written(tmp_path: Path, value: Any) -> None:
    with pytest.raises(TypeError):
        write_cached(tmp_path / "c.json.gz", value)
    assert not (tmp_path / "c.json.gz").exists()


def test_no_benchmark_stores_with_pickle() -> None:
    """pickle (and its kin) load code: the benchmarks' caches are plain files."""
    found = []
    for path in sorted(BENCHMARKS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.relative_to(BENCHMARKS)}: {n}" for n in names
                      if n.split(".")[0] in ("pickle", "cPickle", "dill", "joblib", "shelve", "marshal", "cloudpickle")]
            if isinstance(node, ast.keyword) and node.arg == "allow_pickle" and not (
                    isinstance(node.value, ast.Constant) and node.value.value is False):
                found.append(f"{path.relative_to(BENCHMARKS)}: allow_pickle")
    assert found == []
