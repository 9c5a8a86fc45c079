"""The synthetic corpus follows its recipe, is deterministic, and its gold is what a browser shows."""

from __future__ import annotations

import gzip
import json
import random
import re
from collections import Counter
from pathlib import Path

import pytest

from bodyblocks.page.segment import segment
from bodyblocks.training import synth
from bodyblocks.training.datasets import read_dataset


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    synth.generate_corpus(out, pages=300, seed=3)
    return out


def _records(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "pages.jsonl").read_text(encoding="utf-8").splitlines()]


def test_recipe_counts_on_300_pages(corpus: Path) -> None:
    notes = [json.loads(r["note"]) for r in _records(corpus)]
    assert Counter(n["encoding"] for n in notes) == synth.ENCODING_COUNTS
    assert Counter(n["malformation"] for n in notes) == dict.fromkeys(synth.MALFORMATIONS, 75)
    assert set(Counter(n["template"] for n in notes)) == set(synth.TEMPLATES)
    by_site: dict[str, set[str]] = {}
    for n in notes:
        by_site.setdefault(n["site"], set()).add(n["template"])
    assert len(by_site) >= 12 and all(len(t) == 1 for t in by_site.values())  # one template per site


def test_quota_scales_the_recipe() -> None:
    assert Counter(synth.quota(synth.ENCODING_COUNTS, 300)) == synth.ENCODING_COUNTS
    small = synth.quota(synth.ENCODING_COUNTS, 30)
    assert len(small) == 30 and Counter(small)["utf-8"] == 22


def test_layout_matches_the_shared_format(corpus: Path) -> None:
    keys = {"id", "url", "lang", "split", "html", "gold", "snippets", "page_type", "labels", "note"}
    for rec in _records(corpus)[:20]:
        assert set(rec) == keys and rec["lang"] == "zh"
        assert (corpus / rec["html"]).is_file() and (corpus / rec["gold"]).is_file()
    assert "300 pages" in (corpus / "README.md").read_text(encoding="utf-8")


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    a = synth.generate_corpus(tmp_path / "a", pages=8, seed=5)
    b = synth.generate_corpus(tmp_path / "b", pages=8, seed=5)
    c = synth.generate_corpus(tmp_path / "c", pages=8, seed=6)
    assert [p.html for p in a] == [p.html for p in b]
    assert (tmp_path / "a" / "pages.jsonl").read_bytes() == (tmp_path / "b" / "pages.jsonl").read_bytes()
    assert [p.html for p in a] != [p.html for p in c]


def test_vocabulary_fits_gb2312() -> None:
    """Every word list of the generator (each module-level tuple or list of str) is GB2312 text, so a GBK page
    holds no character its charset lacks: a new list is checked without being named here."""
    lists = {name: v for name, v in vars(synth).items()
             if isinstance(v, tuple | list) and v and all(isinstance(x, str) for x in v)}
    assert {"_SUBJECTS", "_OBJECTS", "_CLAUSES", "HEADINGS", "_NAV", "_NAMES", "_TIMES", "_VERBS"} <= set(lists)
    words = [w for v in lists.values() for w in v] + [name for _, name in synth.SITES]
    assert len(words) > 100
    unencodable = [w for w in words if w.encode("gb2312", errors="replace").decode("gb2312") != w]
    assert unencodable == []


@pytest.mark.parametrize("encoding", synth.ENCODINGS)
def test_encodings_are_what_the_recipe_says(encoding: str) -> None:
    data, gold, meta = synth.synth_page(random.Random(1), encoding=encoding)
    head = data[:600].lower()
    if encoding == "utf-8-bom":
        assert data.startswith(b"\xef\xbb\xbf")
    elif encoding == "utf-8":
        data.decode("utf-8")
    else:
        with pytest.raises(UnicodeDecodeError):
            data.decode("utf-8")
        assert gold.strip().splitlines()[0] in data.decode("gbk")
        assert (b"charset" in head) == (encoding == "gbk-declared")
    doc = segment(data)
    assert not doc.replaced and meta["title"] in doc.text


def test_every_page_carries_the_boilerplate_traps() -> None:
    data, gold, meta = synth.synth_page(random.Random(2), encoding="utf-8", malformation="intact")
    html = data.decode("utf-8")
    nav = re.search(r'<ul class="nav">(.*?)</ul>', html).group(1)
    assert nav.count("<li>") == synth.N_NAV
    side = re.search(r'<ul class="hot-list">(.*?)</ul>', html).group(1)
    assert side.count("<li>") == synth.N_SIDEBAR and f">{meta['repeated']}</a>" in side
    assert html.count('class="comment"') == synth.N_COMMENTS
    assert html.count('class="ad-slot"') == synth.N_ADS
    for cls in ("tag-cloud", "author-card", "pager", "cookie-notice"):
        assert f'class="{cls}"' in html
    assert re.search(r"<script>[^<]*本站声明", html) and meta["statement"] not in segment(data).text
    assert meta["repeated"] in gold.splitlines()[2:-1]  # a middle body line, never first or last


def test_gold_is_the_displayed_text() -> None:
    pages = [synth.synth_page(random.Random(i)) for i in range(40)]
    golds = "\n".join(g for _, g, _ in pages)
    assert "&" in golds and "R&D" in golds and "<5℃" in golds  # entities decoded
    assert not re.search(r"&[a-z]+;|&#\d+;", golds)
    assert any(b"<br" in d.split(b"<h1>")[1].split(b"pager")[0] for d, _, _ in pages)
    for _, gold, meta in pages:
        assert meta["hidden"] not in gold and "网友评论" not in gold and "广告" not in gold
        assert gold.splitlines() == meta["body_lines"]


@pytest.mark.parametrize("template", synth.TEMPLATES)
@pytest.mark.parametrize("malformation", synth.MALFORMATIONS)
def test_gold_lines_survive_segmentation_whole(template: str, malformation: str) -> None:
    data, gold, _ = synth.synth_page(random.Random(7), template=template, malformation=malformation)
    block_lines = {line for b in segment(data).blocks for line in b.text.split("\n")}
    assert [g for g in gold.splitlines() if g not in block_lines] == []


def test_malformations_are_in_the_bytes() -> None:
    rng = random.Random
    unclosed, _, _ = synth.synth_page(rng(4), encoding="utf-8", malformation="unclosed-p")
    article = unclosed.decode().split("<h1>")[1].split('class="pager"')[0]
    assert "<p>" in article and "</p>" not in article
    unquoted, _, _ = synth.synth_page(rng(4), encoding="utf-8", malformation="unquoted-attrs")
    assert "class=sidebar" in unquoted.decode() and 'class="sidebar"' not in unquoted.decode()
    missing, gold, _ = synth.synth_page(rng(4), encoding="utf-8", malformation="missing-div")
    title = gold.splitlines()[0]
    block = next(b for b in segment(missing).blocks if b.text == title)
    assert "div.header" in block.tag_path  # the body now sits inside the header container


def test_written_pages_read_back(tmp_path: Path) -> None:
    made = synth.generate_corpus(tmp_path, pages=6, seed=1)
    read = list(read_dataset(tmp_path))
    assert [p.id for p in read] == [p.id for p in made]
    assert [p.gold for p in read] == [p.gold for p in made]
    assert gzip.decompress((tmp_path / "html" / f"{made[0].id}.html.gz").read_bytes()) == made[0].html
    assert read[0].meta["site"] == made[0].meta["site"]
