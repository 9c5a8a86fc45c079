"""Ray Data: a local Ray cluster (2 CPUs) extracts a WARC into the same shards, row for row, as the
single-process run; resume by shard; a page whose stage raises is a row with its error, not a failed job."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

pytest.importorskip("ray.data")
pytest.importorskip("warcio")

import ray  # noqa: E402

from bodyblocks.batch.columnar import read_shard  # noqa: E402
from bodyblocks.batch.runner import BatchOptions  # noqa: E402
from bodyblocks.batch.warc import Response, write_warc  # noqa: E402
from bodyblocks.cli import main  # noqa: E402
from bodyblocks.scale import pipeline  # noqa: E402
from bodyblocks.training.synth import synth_page  # noqa: E402

pytestmark = pytest.mark.slow
RUSSIAN = ("<html lang='ru'><head><title>Погода</title></head><body><article><h1>Погода в городе</h1>"
           + "".join(f"<p>Это абзац номер {i} статьи о погоде в городе, и в нём достаточно слов.</p>" for i in range(5))
           + "</article></body></html>")


def crawl(path: Path) -> Path:
    """A WARC of synthetic pages (UTF-8; GBK and cp1251 with the charset only in Content-Type), an image, a
    redirect, and a corrupt gzip member in the middle."""
    rng = random.Random(3)
    responses = []
    for i in range(9):
        encoding = "gbk-undeclared" if i % 3 == 1 else "utf-8"
        html, _, _ = synth_page(rng, encoding=encoding)
        charset = "gbk" if encoding.startswith("gbk") else "utf-8"
        responses.append(Response(f"http://example.org/{i}", html, f"text/html; charset={charset}"))
    responses.insert(4, Response("http://example.org/ru", RUSSIAN.encode("cp1251"), "text/html; charset=windows-1251"))
    responses.insert(6, Response("http://example.org/logo.png", b"\x89PNG\r\n\x1a\n" + bytes(64), "image/png"))
    responses.insert(7, Response("http://example.org/moved", b"", status="301 Moved Permanently"))
    first, second = path.with_name("a.warc.gz"), path.with_name("b.warc.gz")
    write_warc(first, responses[:6])
    write_warc(second, responses[6:])
    corrupt = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + b"\xba\xad" * 20
    path.write_bytes(first.read_bytes() + corrupt + second.read_bytes())
    return path


@pytest.fixture(scope="module")
def local_ray():  # noqa: ANN201 - yields nothing
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def shards(out: Path) -> dict[str, list[dict]]:
    return {p.name: read_shard(p) for p in sorted(out.glob("*.parquet"))}


def test_ray_gives_the_single_process_rows_and_resumes_by_shard(tmp_path: Path, local_ray: None) -> None:
    warc = crawl(tmp_path / "crawl.warc.gz")
    single, distributed = tmp_path / "single", tmp_path / "ray"
    common = ["--format", "parquet", "--shard-size", "4", "--no-progress"]
    assert main(["extract", str(warc), "--out", str(single), "--workers", "1", *common]) == 1  # the corrupt one
    assert main(["extract", str(warc), "--out", str(distributed), "--ray", *common]) == 1
    expected = shards(single)
    assert list(expected) == ["crawl-00000.parquet", "crawl-00001.parquet", "crawl-00002.parquet"]
    got = shards(distributed)
    assert got == expected  # every row: id, url, record id, title, text, markdown, language, flags, error
    rows = [r for rs in got.values() for r in rs]
    assert len(rows) == 11 and sum(1 for r in rows if r["error"]) == 1
    assert next(r for r in rows if r["url"] == "http://example.org/ru")["encoding"] == "cp1251"
    assert all(r["text"] for r in rows if not r["error"])

    before = {p.name: p.stat().st_mtime_ns for p in distributed.glob("*.parquet")}
    (distributed / "crawl-00001.parquet").unlink()
    summary = pipeline.run_ray([warc], distributed, BatchOptions(extractor="ensemble", fmt="parquet", shard_size=4))
    assert summary.skipped == 7 and summary.ok == 3 and summary.reasons == {"malformed": 1}  # the corrupt member
    assert [s["shard"] for s in summary.shards] == ["crawl-00001"]
    assert shards(distributed) == expected
    for name in ("crawl-00000.parquet", "crawl-00002.parquet"):
        assert (distributed / name).stat().st_mtime_ns == before[name]


def test_the_python_api_takes_and_returns_datasets(tmp_path: Path, local_ray: None) -> None:
    warc = crawl(tmp_path / "crawl.warc.gz")
    ds = pipeline.read_pages([warc], shard_size=4)
    assert isinstance(ds, ray.data.Dataset)
    out = pipeline.extract_dataset(ds, BatchOptions(extractor="gbt"), pipeline.RayOptions(workers=1, actors=1))
    assert isinstance(out, ray.data.Dataset)
    rows = sorted(out.take_all(), key=lambda r: (r["position"], r["filtered"] or ""))
    pages = [r for r in rows if not r["filtered"]]
    assert [r["position"] for r in pages] == list(range(11))
    assert sorted(r["filtered"] for r in rows if r["filtered"]) == ["http-status", "not-html"] + ["request-record"] * 12
    assert [r["error"].split(":")[0] for r in pages if r["error"]] == ["malformed"]


def test_a_stage_that_raises_fails_its_page_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In process (no Ray): the CPU stage and the model actor turn exceptions into rows with errors."""
    import pyarrow as pa

    warc = crawl(tmp_path / "crawl.warc.gz")
    inputs = pa.table({"path": [str(warc)], "source": ["crawl"]})
    batch = next(pipeline._read_rows(inputs, shard_size=100, done=frozenset()))
    real = pipeline.work

    def work(job):  # noqa: ANN001, ANN202
        if job.url == "http://example.org/2":
            raise RuntimeError("a bug in a library")
        return real(job)

    monkeypatch.setattr(pipeline, "work", work)
    opts = BatchOptions(extractor="ensemble")
    prepared = pipeline._prepare_rows(batch, opts)
    classify = pipeline.Classify(opts, gpu=False)
    real_forward, singles = classify.extractor.forward, []

    def forward(prepared):  # noqa: ANN001, ANN202 - fails every batch, and the third page alone
        if len(prepared.docs) > 1:
            raise RuntimeError("forward failed on the batch")
        singles.append(1)
        if len(singles) == 3:
            raise RuntimeError("forward failed on this page")
        return real_forward(prepared)

    classify.extractor.forward = forward
    rows = {r["url"]: r for r in classify(prepared).to_pylist() if not r["filtered"]}
    assert len(rows) == 11
    assert rows["http://example.org/2"]["error"] == "error: RuntimeError: a bug in a library"
    assert sorted(r["error"].split(":", 1)[0] for r in rows.values() if r["error"]) == ["error", "error", "malformed"]
    assert sum("classification failed: RuntimeError: forward failed on this page" in (r["error"] or "")
               for r in rows.values()) == 1
    assert sum(1 for r in rows.values() if r["error"] is None and r["text"]) == 8


def test_ray_flags_that_cannot_apply_are_refused_before_anything_runs(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    warc = crawl(tmp_path / "crawl.warc.gz")
    out = tmp_path / "out"
    assert main(["extract", str(warc), "--out", str(out), "--ray", "--format", "txt"]) == 2
    assert "--ray writes parquet or jsonl shards, not txt" in capsys.readouterr().err
    assert main(["extract", str(warc), "--out", str(out), "--ray", "--fallback"]) == 2
    assert "--ray does not take --fallback" in capsys.readouterr().err
    urls = tmp_path / "urls.txt"
    urls.write_text("https://example.org/a\nhttps://example.org/b\n")
    with pytest.raises(ValueError, match="not URL lists"):
        pipeline.read_pages([urls])
    assert not out.exists()
