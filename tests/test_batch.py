"""Batch extraction: every input kind, failures recorded and counted, resume, report, review pages."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from bodyblocks.batch import BatchOptions, iter_jobs, run_batch, stem_of
from bodyblocks.batch.outputs import sampled
from bodyblocks.cli import main
from bodyblocks.extraction.decision import DecisionRule
from bodyblocks.loading.options import ExtractOptions
from bodyblocks.page.segment import segment
from bodyblocks.types import Extraction

ARTICLE = """<html><head><title>Flood relief</title></head><body>
<div class="nav"><a href="/">Home</a> | <a href="/news">News</a> | <a href="/about">About</a></div>
<div class="article"><h1>Flood relief reaches the valley</h1>
<p>Relief convoys reached the flooded valley on Tuesday after three days of rain closed the only road.</p>
<p>Officials said clean water, blankets and medicine were handed out at four schools used as shelters.</p>
<p>Engineers expect the bridge to reopen next week, once the river falls below its warning level again.</p>
</div><div class="footer">Copyright 2026 Example News</div></body></html>"""


def make_inputs(root: Path) -> Path:
    """A folder mixing good pages (plain, gzip, nested) with binary junk, an empty file and a deep page."""
    src = root / "in"
    (src / "sub").mkdir(parents=True)
    (src / "good.html").write_text(ARTICLE, encoding="utf-8")
    zh = ARTICLE.replace("<h1>Flood", "<h1>洪水救援 Flood")
    (src / "sub" / "zipped.html.gz").write_bytes(gzip.compress(zh.encode("gbk")))
    (src / "junk.html").write_bytes(b"%PDF-1.5\n\x00\x01\x02binary")
    (src / "empty.htm").write_bytes(b"")
    deep = "<html><body>" + "<div>" * 10_000 + "<p>Deep text here.</p>" + "</div>" * 10_000 + "</body></html>"
    (src / "deep.html").write_text(deep, encoding="utf-8")
    (src / "notes.md").write_text("not a page", encoding="utf-8")
    return src


def report(out: Path) -> dict:
    return json.loads((out / "report.json").read_text(encoding="utf-8"))


def test_stem_of() -> None:
    assert stem_of(Path("a/b.html.gz")) == "b" and stem_of(Path("x.htm")) == "x" and stem_of(Path("y.HTML")) == "y"


def test_folder_with_junk_yields_every_good_page_and_an_error_for_each_bad_one(tmp_path: Path) -> None:
    src = make_inputs(tmp_path)
    out = tmp_path / "out"
    totals = run_batch([src], out, BatchOptions(extractor="heuristic", progress=False))
    assert (totals.pages, totals.ok, totals.failed) == (5, 3, 2)
    assert "Relief convoys reached" in (out / "good.txt").read_text(encoding="utf-8")
    assert "Relief convoys reached" in (out / "sub" / "zipped.txt").read_text(encoding="utf-8")
    assert (out / "deep.txt").exists()
    rep = report(out)
    assert rep["totals"]["reasons"] == {"binary": 1, "empty": 1}
    by_id = {p["id"]: p for p in rep["pages"]}
    assert by_id["junk"]["status"] == "failed" and by_id["junk"]["error"].startswith("binary")
    assert by_id["empty"]["status"] == "failed" and by_id["sub/zipped"]["encoding"] == "gb18030"
    assert by_id["good"]["title"] == "Flood relief" and by_id["good"]["chars"] > 200


def test_resume_skips_done_pages(tmp_path: Path) -> None:
    src = make_inputs(tmp_path)
    out = tmp_path / "out"
    run_batch([src], out, BatchOptions(extractor="heuristic", progress=False))
    (out / "good.txt").unlink()
    stamp = (out / "deep.txt").stat().st_mtime_ns
    totals = run_batch([src], out, BatchOptions(extractor="heuristic", progress=False))
    assert totals.skipped == 2 and totals.ok == 1 and totals.failed == 2
    assert (out / "good.txt").exists() and (out / "deep.txt").stat().st_mtime_ns == stamp


def test_dataset_folder_named_by_id_json_format(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    (ds / "html").mkdir(parents=True)
    (ds / "html" / "p1.html.gz").write_bytes(gzip.compress(ARTICLE.encode()))
    rec = {"id": "page-one", "url": "http://example.org/a", "html": "html/p1.html.gz", "gold": None}
    (ds / "pages.jsonl").write_text(json.dumps(rec) + "\n", encoding="utf-8")
    jobs = list(iter_jobs([ds]))
    assert [j.key for j in jobs] == ["page-one"] and jobs[0].url == "http://example.org/a"
    run_batch([ds], tmp_path / "out", BatchOptions(extractor="heuristic", fmt="json", progress=False))
    data = json.loads((tmp_path / "out" / "page-one.json").read_text(encoding="utf-8"))
    assert data["title"] == "Flood relief" and "medicine" in data["text"]


def test_missing_input_is_a_failed_page(tmp_path: Path) -> None:
    totals = run_batch([tmp_path / "nope.html"], tmp_path / "out", BatchOptions(extractor="heuristic", progress=False))
    assert totals.failed == 1 and report(tmp_path / "out")["pages"][0]["error"].startswith("not-found")


def test_parallel_workers_and_review_pages(tmp_path: Path) -> None:
    src = make_inputs(tmp_path)
    out = tmp_path / "out"
    opts = BatchOptions(extractor="heuristic", workers=2, review=1.0, fmt="md", progress=False)
    totals = run_batch([src], out, opts)
    assert totals.ok == 3 and totals.failed == 2
    assert (out / "good.md").read_text(encoding="utf-8").startswith("# Flood relief")
    review = (out / "review" / "pages" / "good.html").read_text(encoding="utf-8")
    assert "Relief convoys" in review and (out / "review" / "index.html").exists()


def test_review_takes_every_low_confidence_page_and_lists_them_first(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from bodyblocks.loading import registry

    class Unsure:
        name = "unsure"

        def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
            low = b"doubt" in (html if isinstance(html, bytes) else html.encode())
            return Extraction(text="body", extractor="unsure", confidence=0.2 if low else 0.9, low_confidence=low)

    monkeypatch.setitem(registry.BASELINES, "unsure", Unsure)
    src = tmp_path / "in"
    src.mkdir()
    for i in range(40):
        (src / f"p{i:02d}.html").write_text("<p>doubt</p>" if i in (7, 31) else "<p>sure</p>", encoding="utf-8")
    out = tmp_path / "out"
    run_batch([src], out, BatchOptions(extractor="unsure", review=0.2, progress=False))
    reviewed = {p.stem for p in (out / "review" / "pages").glob("p*.html")}
    others = {f"p{i:02d}" for i in range(40) if sampled(f"p{i:02d}", 0.2)} - {"p07", "p31"}
    assert others and reviewed == others | {"p07", "p31"}  # every low-confidence page, and the sample
    index = (out / "review" / "index.html").read_text(encoding="utf-8")
    assert max(index.index("p07.html"), index.index("p31.html")) < min(index.index(f"{k}.html") for k in others)


def test_cli_extract_exit_status(tmp_path: Path) -> None:
    src = make_inputs(tmp_path)
    assert main(["extract", str(src), "--out", str(tmp_path / "o1"), "--extractor", "heuristic", "--no-progress"]) == 1
    good = src / "good.html"
    assert main(["extract", str(good), "--out", str(tmp_path / "o2"), "--extractor", "heuristic", "--no-progress"]) == 0


def test_options_are_validated() -> None:
    with pytest.raises(ValueError):
        BatchOptions(fmt="pdf")
    with pytest.raises(ValueError):
        BatchOptions(review=2.0)


@pytest.mark.browser
@pytest.mark.slow
def test_url_lists_are_known_by_their_content_and_pages_are_counted(tmp_path: Path) -> None:
    from bodyblocks.batch.inputs import count_pages, is_url_list

    (tmp_path / "list").write_text("https://a.example/1\nhttps://a.example/2\nnot a url\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("some words\nmore words\n", encoding="utf-8")
    (tmp_path / "page.txt").write_text("<html><body><p>https://a.example/1</p></body></html>", encoding="utf-8")
    (tmp_path / "x.html").write_text("https://a.example/1\n", encoding="utf-8")  # named like a page: a page
    assert [is_url_list(tmp_path / n) for n in ("list", "notes.txt", "page.txt", "x.html")] == [
        True, False, False, False]
    folder = tmp_path / "pages"
    (folder / "sub").mkdir(parents=True)
    for name in ("a.html", "b.htm", "sub/c.html.gz", "sub/readme.md"):
        (folder / name).write_bytes(b"<p>x</p>")
    assert count_pages([folder, tmp_path / "list", tmp_path / "x.html", tmp_path / "missing.html"]) == 3 + 3 + 1 + 1
    assert count_pages([folder, tmp_path / "list"], stop_at=1) == 1 and count_pages([tmp_path / "e"], 1) == 1


def test_url_list_is_captured_then_extracted(tmp_path: Path, local_site) -> None:  # noqa: ANN001
    """A .txt of URLs goes through headless Chromium; a dead URL is a failed page, the rest extracted."""
    import shutil

    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        pytest.skip("needs Debian's chromium and chromium-driver")
    base = local_site(lambda path: (200, ARTICLE) if path == "/a" else (404, "<p>missing</p>"))
    urls = tmp_path / "urls.txt"
    urls.write_text(f"# pages\n{base}/a\n{base}/gone\n", encoding="utf-8")
    opts = BatchOptions(extractor="heuristic", progress=False, capture_opts={"timeout": 20, "retries": 0})
    totals = run_batch([urls], tmp_path / "out", opts)
    assert totals.ok == 1 and totals.failed == 1
    host = base.split("://", 1)[1].replace(":", "_")  # outputs are named from the URL: host_port/path
    assert "Relief convoys reached" in (tmp_path / "out" / host / "a.txt").read_text(encoding="utf-8")
    pages = report(tmp_path / "out")["pages"]
    assert {p["id"]: p["input"] for p in pages} == {f"{host}/a": f"{base}/a", f"{host}/gone": f"{base}/gone"}
    failed = [p for p in pages if p["status"] == "failed"]
    assert failed[0]["error"].startswith("capture-http-error")


class _Flaky:
    """A block extractor in BlockExtractor's three steps whose batches fail (in `fail_in`: prepare or forward)
    when they hold a poisoned page; it keeps every block."""

    name = "flaky"
    overlaps = True
    whole_pages = False  # staged: the runner classifies its pages in groups
    page_segmenter = staticmethod(segment)
    batches: list[int] = []
    threads: set[str] = set()
    fail_in = "forward"

    def extract(self, html: str | bytes, url: str | None = None):  # noqa: ANN201
        return self.extract_documents([segment(html)])[0]

    def extract_documents(self, docs, sources=None):  # noqa: ANN001, ANN201
        prepared = self.prepare(docs)
        return self.finish(prepared, self.forward(prepared), sources)

    def _check(self, docs, step):  # noqa: ANN001, ANN202
        if step == _Flaky.fail_in and any("poison" in d.text for d in docs):
            raise RuntimeError("a page in this batch breaks the model")

    def prepare(self, docs):  # noqa: ANN001, ANN201
        _Flaky.batches.append(len(docs))
        self._check(docs, "prepare")
        return docs

    def forward(self, docs):  # noqa: ANN001, ANN201
        import threading

        import numpy as np

        _Flaky.threads.add(threading.current_thread().name)
        self._check(docs, "forward")
        return [np.ones(len(d.blocks)) for d in docs]

    def finish(self, docs, probs, sources=None):  # noqa: ANN001, ANN201
        rule = DecisionRule(0.5, 0.5)
        return [rule.decide(d, p, "flaky") for d, p in zip(docs, probs, strict=True)]


@pytest.mark.parametrize(("overlap", "fail_in"), [(True, "forward"), (True, "prepare"), (False, "forward")])
def test_classification_overlaps_parsing_and_a_failing_batch_goes_page_by_page(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, overlap: bool, fail_in: str) -> None:
    import threading

    from bodyblocks.batch import runner
    from bodyblocks.loading import registry

    monkeypatch.setitem(registry.BASELINES, "flaky", _Flaky)
    monkeypatch.setattr(_Flaky, "fail_in", fail_in)
    monkeypatch.setattr(runner, "GROUP", 1)  # batches of batch_size pages
    _Flaky.batches, _Flaky.threads = [], set()
    src = make_inputs(tmp_path)
    for i in range(5):
        (src / f"more{i}.html").write_text(ARTICLE.replace("Tuesday", f"day {i}"), encoding="utf-8")
    (src / "poisoned.html").write_text(ARTICLE.replace("Tuesday", "poison day"), encoding="utf-8")
    out = tmp_path / f"out-{overlap}"
    opts = BatchOptions(extractor="flaky", options=ExtractOptions(batch_size=3), overlap=overlap, progress=False)
    totals = run_batch([src], out, opts)
    assert (totals.pages, totals.ok, totals.failed) == (11, 8, 3)  # junk, empty, and the poisoned page
    assert totals.reasons == {"binary": 1, "empty": 1, "error": 1}
    by_id = {p["id"]: p for p in report(out)["pages"]}
    assert by_id["poisoned"]["error"] == "error: classification failed: a page in this batch breaks the model"
    for i in range(5):
        assert "after three days" in (out / f"more{i}.txt").read_text(encoding="utf-8")
    assert 1 in _Flaky.batches and max(_Flaky.batches) == 3  # the poisoned batch was retried page by page
    main_thread = threading.current_thread().name
    assert any(t != main_thread for t in _Flaky.threads) == overlap  # forward passes ran on the second thread


def test_overlapped_and_sequential_runs_write_the_same_outputs(tmp_path: Path) -> None:
    src = make_inputs(tmp_path)
    outs = []
    for overlap in (True, False):
        out = tmp_path / f"out-{overlap}"
        run_batch([src], out, BatchOptions(extractor="model", overlap=overlap, progress=False))
        outs.append({p.relative_to(out): p.read_text(encoding="utf-8") for p in sorted(out.rglob("*.txt"))})
    assert outs[0] == outs[1] and len(outs[0]) == 3


class _Queued(_Flaky):
    """_Flaky whose forward passes are slow, counting the batches prepared and not yet finished."""

    name = "queued"
    outstanding: list[int] = []
    open = 0

    def prepare(self, docs):  # noqa: ANN001, ANN201
        _Queued.open += 1
        _Queued.outstanding.append(_Queued.open)
        return docs

    def forward(self, docs):  # noqa: ANN001, ANN201
        import time

        time.sleep(0.05)
        return super().forward(docs)

    def finish(self, docs, probs, sources=None):  # noqa: ANN001, ANN201
        _Queued.open -= 1
        return super().finish(docs, probs, sources)


def test_forward_passes_queue_up_to_in_flight_and_outputs_keep_input_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bodyblocks.batch import runner, scheduler
    from bodyblocks.loading import registry

    monkeypatch.setitem(registry.BASELINES, "queued", _Queued)
    monkeypatch.setattr(scheduler, "IN_FLIGHT", 3)
    monkeypatch.setattr(runner, "GROUP", 1)  # one page per call
    src = tmp_path / "in"
    src.mkdir()
    for i in range(12):
        (src / f"p{i:02d}.html").write_text(ARTICLE.replace("Tuesday", f"day {i}"), encoding="utf-8")
    orders = []
    for overlap in (True, False):
        _Queued.outstanding, _Queued.open = [], 0
        out = tmp_path / f"out-{overlap}"
        totals = run_batch([src], out, BatchOptions(extractor="queued", overlap=overlap, progress=False))
        assert totals.ok == 12 and _Queued.open == 0
        assert max(_Queued.outstanding) == (4 if overlap else 1)  # three in flight while the next is prepared
        orders.append([p["id"] for p in report(out)["pages"]])
    assert orders[0] == orders[1] == [f"p{i:02d}" for i in range(12)]


@pytest.mark.parametrize("overlap", [True, False])
def test_report_keeps_input_order_with_failed_pages_between_batches_in_flight(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, overlap: bool) -> None:
    from bodyblocks.batch import runner, scheduler
    from bodyblocks.loading import registry

    monkeypatch.setitem(registry.BASELINES, "queued", _Queued)
    monkeypatch.setattr(scheduler, "IN_FLIGHT", 3)
    monkeypatch.setattr(runner, "GROUP", 2)
    monkeypatch.setattr(_Queued, "fail_in", "forward")
    src = tmp_path / "in"
    src.mkdir()
    for i in range(14):
        text = ARTICLE.replace("Tuesday", "poison day" if i == 9 else f"day {i}")
        (src / f"p{i:02d}.html").write_text(text, encoding="utf-8")
    (src / "p05.html").write_bytes(b"")  # empty: fails while parsing, behind the batches before it
    (src / "p11.html").write_bytes(b"%PDF-1.5\n\x00\x01binary")
    _Queued.outstanding, _Queued.open = [], 0
    totals = run_batch([src], tmp_path / "out", BatchOptions(extractor="queued", overlap=overlap, progress=False))
    pages = report(tmp_path / "out")["pages"]
    assert [p["id"] for p in pages] == [f"p{i:02d}" for i in range(14)]  # every page once, in input order
    assert [p["id"] for p in pages if p["status"] == "failed"] == ["p05", "p09", "p11"]
    assert (totals.ok, totals.failed) == (11, 3)


def test_cpu_extractor_sends_one_page_batches_through_the_traced_forward(monkeypatch: pytest.MonkeyPatch) -> None:
    from bodyblocks.classify.traced import SinglePage
    from bodyblocks.loading.checkpoints import load_extractor

    calls = []
    real = SinglePage.__call__
    monkeypatch.setattr(SinglePage, "__call__", lambda self, b: calls.append(1) or real(self, b))
    docs = [segment(ARTICLE), segment(ARTICLE.replace("Tuesday", "Monday"))]
    one = load_extractor("model", device="cpu", batch_size=1, engine="torch")
    sixteen = load_extractor("model", device="cpu", batch_size=16, engine="torch")
    assert one.model.single is not None
    calls.clear()  # (loading checked the traces on probe pages)
    a = one.probabilities(docs)
    assert len(calls) == 2
    b = sixteen.probabilities(docs)  # both pages in one eager pass
    assert len(calls) == 2
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-5)

    def broken(self, batch):  # noqa: ANN001, ANN202
        raise RuntimeError("The following operation failed in the TorchScript interpreter.")

    monkeypatch.setattr(SinglePage, "__call__", broken)
    for x, y in zip(one.probabilities(docs), b, strict=True):  # a trace that fails at run time: eager answers
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-5)


def test_block_classifiers_get_groups_of_pages_and_forward_passes_of_batch_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bodyblocks.batch import runner
    from bodyblocks.extraction.extractor import BlockExtractor

    calls: list[tuple[int, list[int], int]] = []
    real = BlockExtractor.prepare

    def prepare(self, docs):  # noqa: ANN001, ANN202
        prepared = real(self, docs)
        calls.append((len(docs), [len(b.pages) for b in prepared.batches], self.model.batch_size))
        return prepared

    monkeypatch.setattr(BlockExtractor, "prepare", prepare)
    monkeypatch.setattr(runner, "GROUP", 4)
    src = tmp_path / "in"
    src.mkdir()
    for i in range(6):
        (src / f"p{i}.html").write_text(ARTICLE.replace("Tuesday", f"day {i}"), encoding="utf-8")
    on_torch = ExtractOptions(engine="torch")  # (ONNX Runtime runs whole pages in the workers)
    totals = run_batch([src], tmp_path / "out", BatchOptions(extractor="ensemble", options=on_torch, progress=False))
    assert totals.ok == 6
    assert calls == [(4, [1, 1, 1, 1], 1), (2, [1, 1], 1)]  # groups of 4 pages, one page per forward pass
    calls.clear()
    three = ExtractOptions.of(on_torch, batch_size=3)
    run_batch([src], tmp_path / "out2", BatchOptions(extractor="ensemble", options=three, progress=False))
    assert calls == [(4, [3, 1], 3), (2, [2], 3)]


def test_cli_extract_gives_torch_the_cores_per_worker_less_the_overlapping_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bodyblocks import batch
    from bodyblocks.runtime import cores

    seen: list[BatchOptions] = []

    def fake_run_batch(inputs: list[str], out: str, opts: BatchOptions) -> batch.Totals:
        seen.append(opts)
        return batch.Totals()

    monkeypatch.setattr(batch, "run_batch", fake_run_batch)
    monkeypatch.setattr(cores, "usable_cores", lambda: 8)
    (tmp_path / "page.html").write_text("<p>x</p>", encoding="utf-8")  # an input that is not there: exit 2
    base = ["extract", str(tmp_path / "page.html"), "--out", str(tmp_path / "o"), "--extractor", "model",
            "--no-progress",
            "--engine", "torch"]
    assert main([*base, "--workers", "2"]) == 0
    assert main([*base, "--threads", "3", "--overlap"]) == 0
    assert main([*base, "--no-overlap"]) == 0
    assert main(base) == 0
    assert [o.options.threads for o in seen] == [3, 3, 8, 7]
    assert [o.overlap for o in seen] == [None, True, False, None]  # None: run_batch overlaps when it can


def test_overlap_needs_the_three_steps_and_restores_the_switch_interval(tmp_path: Path) -> None:
    import sys

    from bodyblocks.extraction.extractor import StagedExtractor
    from bodyblocks.loading.registry import get_extractor

    def can_overlap(ex: object) -> bool:  # as run_batch decides
        return isinstance(ex, StagedExtractor) and ex.overlaps

    assert BatchOptions().overlap is None
    assert not can_overlap(get_extractor("heuristic")) and not can_overlap(get_extractor("gbt"))
    assert isinstance(get_extractor("gbt"), StagedExtractor)  # the trees: grouped, but nothing to overlap
    assert can_overlap(get_extractor("model")) and can_overlap(get_extractor("ensemble")) and can_overlap(_Flaky())
    before = sys.getswitchinterval()
    run_batch([make_inputs(tmp_path)], tmp_path / "o", BatchOptions(extractor="model", progress=False))
    assert sys.getswitchinterval() == before


def test_free_heap_memory_goes_back_after_every_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from bodyblocks.batch import release_free_memory, runner

    if sys.platform.startswith("linux") and "glibc" in " ".join(__import__("platform").libc_ver()):
        assert release_free_memory() is True  # glibc's malloc_trim was found and called
    calls: list[int] = []
    monkeypatch.setattr(runner, "release_free_memory", lambda: calls.append(1) or True)
    monkeypatch.setattr(runner, "WINDOW", 2)
    src = make_inputs(tmp_path)  # 5 page files: 3 windows of at most 2
    totals = run_batch([src], tmp_path / "out", BatchOptions(extractor="heuristic", progress=False))
    assert totals.pages == 5 and len(calls) == 3


def test_a_run_collects_its_young_objects_rarely_in_its_workers_and_in_its_own_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from bodyblocks.batch import runner
    from bodyblocks.runtime.pool import GC_YOUNG, WorkerPool

    pool = WorkerPool(1, _young_threshold)
    try:
        assert [result for _, result, _ in pool.run([0])] == [GC_YOUNG]
    finally:
        pool.close()
    seen: list[int] = []
    real = runner.work
    monkeypatch.setattr(runner, "work", lambda job: seen.append(gc.get_threshold()[0]) or real(job))
    before = gc.get_threshold()
    totals = run_batch([make_inputs(tmp_path)], tmp_path / "out",
                       BatchOptions(extractor="heuristic", workers=1, progress=False))
    assert totals.pages == 5 and seen == [GC_YOUNG] * 5  # the pages of a run without workers
    assert gc.get_threshold() == before != (GC_YOUNG, *before[1:])  # restored after the run


def _young_threshold(_task: int) -> int:
    import gc

    return gc.get_threshold()[0]


# ------------------------------------------------------------------------------------------ what workers send back
def _block_extraction(key: str) -> Extraction:
    """A block extractor's answer on ARTICLE (blocks, probabilities, kept) with a flag or two set by `key`."""
    doc = segment(ARTICLE)
    probs = np.linspace(0.05, 0.95, len(doc.blocks)).astype(np.float32)
    ex = DecisionRule(0.5, 0.8 if key.endswith("1") else 0.5).decide(doc, probs, "ensemble")
    ex.truncated = key.endswith("2")
    return ex


@pytest.mark.parametrize("fmt,review", [("txt", 0.0), ("json", 0.0), ("md", 1.0), ("jsonl", 0.5)])
def test_a_page_rendered_in_a_worker_is_written_as_its_extraction_is(tmp_path: Path, fmt: str, review: float) -> None:
    import pickle

    from bodyblocks.batch.inputs import Job
    from bodyblocks.batch.outputs import Rendered, Report

    def run(out: Path, rendered: bool) -> None:
        out.mkdir()
        report = Report(out, fmt, "ensemble", review=review, resume=False, shard_size=2)
        for i in range(5):
            job = Job(key=f"page-{i}", path=f"/in/page-{i}.html", source="in", position=i, language="en")
            ex = _block_extraction(job.key)
            if rendered:  # as a worker process sends it back
                sent = pickle.loads(pickle.dumps(report.renderer(job, ex)))
                assert isinstance(sent, Rendered) and (sent.ex is not None) == bool(review)
                report.write(job, sent, None, 0.5)
            else:
                report.write(job, ex, None, 0.5)
        report.write(Job(key="gone", path="/in/gone.html", source="in", position=5), None, "not-found: x", 0.0)
        report.close()
        report.write_report(1.0)

    run(tmp_path / "a", rendered=False)
    run(tmp_path / "b", rendered=True)
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert len(files) > 3
    for rel in files:
        if rel.name != ".bodyblocks.lock":
            a = (tmp_path / "a" / rel).read_bytes().replace(str(tmp_path / "a").encode(), b"OUT")
            assert a == (tmp_path / "b" / rel).read_bytes().replace(str(tmp_path / "b").encode(), b"OUT"), rel


def test_a_worker_renders_its_extraction_for_the_report(tmp_path: Path) -> None:
    from bodyblocks.batch import worker
    from bodyblocks.batch.inputs import Job
    from bodyblocks.batch.outputs import Renderer
    from bodyblocks.loading.registry import get_extractor

    page = tmp_path / "good.html"
    page.write_text(ARTICLE, encoding="utf-8")
    extractor = get_extractor("heuristic")
    render = Renderer("json")
    try:
        worker.init_worker(extractor, 60, None, render)
        job, sent, error, _ = worker.work(Job(key="good", path=str(page)))
        assert error is None and sent == render(job, extractor.extract(page.read_bytes()))
        worker.init_worker(extractor, 60)  # no renderer: the Extraction itself comes back
        assert isinstance(worker.work(Job(key="good", path=str(page)))[1], Extraction)
    finally:
        worker.init_worker(None, 60)


def _freeze_count(_task: int) -> int:
    import gc

    return gc.get_freeze_count()


def test_a_worker_gets_its_next_task_before_the_results_are_handed_out() -> None:
    from bodyblocks.runtime.pool import WorkerPool

    pool = WorkerPool(1, _freeze_count)
    try:
        seen = []
        for task, result, failure in pool.run(range(3)):
            w = pool.workers[0]
            seen.append((task, w.busy and w.task, failure))
            assert result > 0  # what the worker inherits is frozen: its collections skip it
        assert seen == [(0, 1, None), (1, 2, None), (2, False, None)]
    finally:
        pool.close()
