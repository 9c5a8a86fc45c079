"""bodyblocks as a datatrove step and over a Hugging Face dataset: the same body text and page fields as
`bodyblocks extract`, in a datatrove pipeline on a WARC (docs/SCALE.md's, run as written) and in datasets.map."""

from __future__ import annotations

import gzip
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("datatrove")

from datatrove.data import Document  # noqa: E402

from bodyblocks import get_extractor  # noqa: E402
from bodyblocks.batch.warc import Response, write_warc  # noqa: E402
from bodyblocks.scale.datatrove_step import BodyblocksExtractor  # noqa: E402
from bodyblocks.scale.hf_map import FIELDS, BodyblocksMap  # noqa: E402
from bodyblocks.training.synth import synth_page  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NO_BODY = "<html><head><title>App</title></head><body><script>run()</script></body></html>"
ARTICLE = """<!DOCTYPE html><html lang="en-GB"><head><meta charset="utf-8"><title>Rivers in spring | The Daily</title>
<link rel="canonical" href="/news/rivers"><meta name="author" content="Ann Lee">
<meta property="og:site_name" content="The Daily">
<meta property="article:published_time" content="2024-04-02T08:00:00Z">
</head><body><nav><a href="/">Home</a> <a href="/news">News</a></nav><article><h1>Rivers in spring</h1>
<p>Rivers rise in spring when the snow on the hills melts, and the towns along their banks prepare for floods
with walls of sandbags and pumps that run through the night.</p>
<p>Engineers measure the water every hour at the bridges, and the forecasts they write tell the farmers when to
move their animals to higher fields before the water comes.</p>
<p>Most years the water goes down again within a week, leaving a layer of mud on the meadows that makes the
grass grow thick by the start of the summer.</p></article><footer>Contact us</footer></body></html>"""


def pages(n: int) -> list[bytes]:
    rng = random.Random(5)
    return [synth_page(rng, encoding="utf-8")[0] for _ in range(n)]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def doc_block(needle: str) -> str:
    """The ```python block of docs/SCALE.md that holds `needle`."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs/SCALE.md").read_text(encoding="utf-8"), re.S)
    found = [b for b in blocks if needle in b]
    assert found, f"docs/SCALE.md shows no python example with {needle}"
    return found[0]


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]]]:
    """A folder crawl/ holding one WARC (pages with body text, one without, a PNG; request records between), and
    `bodyblocks extract`'s JSON Lines rows of it by WARC-Record-ID, in record order."""
    root = tmp_path_factory.mktemp("crawl")
    (root / "crawl").mkdir()
    responses = [Response(f"http://example.org/p{i}", body) for i, body in enumerate(pages(3))]
    responses[1:1] = [Response("http://example.org/news/rivers?ref=1", ARTICLE.encode("utf-8")),
                      Response("http://example.org/app", NO_BODY.encode("utf-8")),
                      Response("http://example.org/logo.png", b"\x89PNG\r\n\x1a\n" + bytes(64), "image/png")]
    write_warc(root / "crawl" / "test.warc.gz", responses)
    done = subprocess.run([sys.executable, "-m", "bodyblocks", "extract", str(root / "crawl" / "test.warc.gz"),
                           "--out", str(root / "cli"), "--format", "jsonl"], env=env(), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for shard in sorted((root / "cli").glob("test-*.jsonl"))
            for line in shard.read_text(encoding="utf-8").splitlines()]
    return root, {r["record_id"]: r for r in rows}


def same_page(doc: dict[str, Any], row: dict[str, Any]) -> None:
    """A datatrove output document (JsonlWriter's line) says what bodyblocks extract's row says of the page."""
    meta = doc["metadata"]
    assert doc.get("text", "") == row["text"], row["url"]
    assert meta["url"] == row["url"]
    for key in ("title", "language", "confidence", "author", "site_name", "canonical_url"):
        assert meta[key] == row[key], (key, row["url"])
    assert meta["published"] == row["date"]
    for flag in ("no_body", "low_confidence", "error_page"):
        assert meta[flag] == (flag in row["flags"]), (flag, row["url"])


def test_the_scale_doc_pipeline_on_a_warc_matches_bodyblocks_extract(crawl: tuple[Path, dict]) -> None:
    root, rows = crawl
    (root / "pipeline.py").write_text(doc_block("LocalPipelineExecutor"), encoding="utf-8")
    done = subprocess.run([sys.executable, "pipeline.py"], cwd=root, env=env(), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    docs = [json.loads(line) for shard in sorted((root / "out").glob("*.jsonl.gz"))
            for line in gzip.open(shard, "rt", encoding="utf-8")]
    with_body = [rid for rid, r in rows.items() if r["text"]]
    assert len(rows) == 5 and len(with_body) == 4  # the PNG is no page on either side; the app page has no body
    assert [d["id"] for d in docs] == with_body
    for d in docs:
        same_page(d, rows[d["id"]])
    article = next(d["metadata"] for d in docs if "rivers" in d["metadata"]["url"])
    assert article["title"] == "Rivers in spring" and article["language"] == "en"
    assert article["canonical_url"] == "http://example.org/news/rivers" and article["published"] == "2024-04-02"
    assert article["author"] == "Ann Lee" and article["no_body"] is False and 0 < article["confidence"] <= 1


def test_keep_empty_forwards_pages_without_body_with_their_flags(crawl: tuple[Path, dict]) -> None:
    from datatrove.pipeline.readers import WarcReader

    root, rows = crawl
    out = list(BodyblocksExtractor(keep_empty=True).run(WarcReader(str(root / "crawl")).run()))
    assert [d.id for d in out] == list(rows)
    for d in out:
        same_page({"text": d.text, "metadata": d.metadata}, rows[d.id])
    app = next(d for d in out if d.metadata["url"].endswith("/app"))
    assert app.text == "" and app.metadata["no_body"] is True and app.metadata["title"] == "App"


def test_the_step_drops_pages_without_body_and_says_why_a_page_is_unreadable() -> None:
    html = pages(1)[0].decode("utf-8")

    def docs() -> list[Document]:  # a step sets its documents' text: each run gets its own
        return [Document(text=html, id="page"), Document(text="", id="empty"),
                Document(text=NO_BODY, id="no-body"), Document(text="static/logo.png", id="path")]

    out = list(BodyblocksExtractor(timeout=60).run(iter(docs())))
    assert [d.id for d in out] == ["page"]
    assert out[0].text == get_extractor("ensemble").extract(html).text and out[0].text
    kept = {d.id: d for d in BodyblocksExtractor(timeout=60, keep_empty=True).run(iter(docs()))}
    assert list(kept) == ["page", "empty", "no-body", "path"]
    assert kept["empty"].metadata["error"].startswith("empty") and kept["path"].metadata["error"]
    assert all(kept[k].metadata["no_body"] and kept[k].text == "" for k in ("empty", "no-body", "path"))
    assert "error" not in kept["no-body"].metadata and "error" not in kept["page"].metadata


def test_an_extractor_that_cannot_be_built_stops_the_task_at_once(tmp_path: Path) -> None:
    import time

    step = BodyblocksExtractor(timeout=60, checkpoint=str(tmp_path / "no-such-model"))
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="cannot be built.*no-such-model"):
        list(step.run(iter([Document(text=NO_BODY, id=f"p{i}") for i in range(3)])))
    assert time.monotonic() - started < 30  # not the sandbox's timeout waited out on every document


def test_an_error_on_one_page_drops_that_page_and_keeps_the_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    from bodyblocks.scale import hf_map

    page = hf_map.PageExtractor.page

    def failing(self: hf_map.PageExtractor, html: str | bytes | None, url: str | None = None) -> Any:
        if isinstance(html, str) and "BOOM" in html:
            raise AttributeError("a bug on this page")
        return page(self, html, url)

    monkeypatch.setattr(hf_map.PageExtractor, "page", failing)  # the sandbox process is forked: it has it too
    html = pages(2)
    docs = [Document(text=html[0].decode("utf-8"), id="a"), Document(text="<p>BOOM</p>", id="boom"),
            Document(text=html[1].decode("utf-8"), id="b")]
    step = BodyblocksExtractor(timeout=60)
    assert [d.id for d in step.run(iter(docs))] == ["a", "b"]
    assert step.stats["clean_error"].total == 1 and "broken_process" not in step.stats.stats
    rows = hf_map.BodyblocksMap()({"html": ["<p>BOOM</p>", html[0]], "url": [None, None]})
    assert rows["error"][0] == "AttributeError: a bug on this page" and rows["no_body"][0]
    assert rows["text"][1] and rows["error"][1] is None


def test_in_a_datatrove_pipeline_after_its_jsonl_reader(tmp_path: Path) -> None:
    from datatrove.pipeline.readers import JsonlReader

    bodies = [b.decode("utf-8") for b in pages(3)]
    with open(tmp_path / "pages.jsonl", "w", encoding="utf-8") as fh:
        for i, html in enumerate(bodies):
            fh.write(json.dumps({"id": f"p{i}", "text": html, "url": f"http://example.org/{i}"}) + "\n")
    out = list(BodyblocksExtractor(timeout=60).run(JsonlReader(str(tmp_path)).run()))
    extractor = get_extractor("ensemble")
    assert [d.id for d in out] == ["p0", "p1", "p2"]
    assert [d.text for d in out] == [extractor.extract(html).text for html in bodies]
    assert [d.metadata["title"] for d in out] == [extractor.extract(html).title for html in bodies]


def test_datasets_map_gives_each_row_its_text_and_fields() -> None:
    datasets = pytest.importorskip("datasets")
    html = [b.decode("utf-8") for b in pages(2)]
    # the first batch has no language, address or confidence: the typed features keep the later values
    rows = {"html": [b"\x00\x01\x02" * 400, NO_BODY.encode(), ARTICLE.encode("utf-8"), html[0].encode("utf-8"),
                     html[1]],
            "url": [None, None, "http://example.org/news/rivers", "http://example.org/0", None]}
    ds = datasets.Dataset.from_dict(rows)
    fn = BodyblocksMap()
    out = ds.map(fn, batched=True, batch_size=2, features=fn.features(ds.features))
    extractor = get_extractor("ensemble")
    assert out["text"][3] == extractor.extract(html[0]).text and out["text"][4] == extractor.extract(html[1]).text
    assert out[2]["title"] == "Rivers in spring" and out[2]["canonical_url"] == "http://example.org/news/rivers"
    assert out[2]["language"] == "en" and out[2]["published"] == "2024-04-02" and 0 < out[2]["confidence"] <= 1
    assert out[0]["text"] == "" and out[0]["no_body"] and out[0]["error"].startswith("binary")
    assert out[1]["text"] == "" and out[1]["no_body"] and out[1]["error"] is None and out[1]["title"] == "App"
    assert out.column_names == ["html", "url", "text", *FIELDS, "error"]


def test_the_scale_doc_datasets_example_runs(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    (tmp_path / "example.py").write_text(doc_block("BodyblocksMap"), encoding="utf-8")
    done = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, env=env(), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[:3] == ["A", "en", "False"], done.stdout


def test_the_speed_benchmark_runs_every_step_over_the_same_documents(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("trafilatura")
    from benchmarks import datatrove_speed

    mini = tmp_path / "mini"
    (mini / "html").mkdir(parents=True)
    records = []
    for i, body in enumerate([*pages(2), ARTICLE.encode("utf-8")]):
        (mini / "html" / f"p{i}.html").write_bytes(body)
        records.append({"id": f"p{i}", "url": None, "split": "test" if i else "train", "html": f"html/p{i}.html"})
    (mini / "pages.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert datatrove_speed.main(["--root", str(tmp_path), "--dataset", "mini", "--pages", "4", "--rounds", "1"]) == 0
    table = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "|---" not in line]
    assert [line.split(" | ")[0] for line in table[1:]] == [f"| {name}" for name in datatrove_speed.steps(1)]
    # the test split's 2 pages, repeated to 4 records: every step keeps all 4 documents, none timed out
    assert all(line.split(" | ")[-2:] == ["4", "0 |"] for line in table[1:]), table
