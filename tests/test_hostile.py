"""Hostile inputs to `bodyblocks extract`: nothing is written outside --out, nothing read outside the inputs,
no output overwrites another, and a bad record or file name fails its page alone, with a reason."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest

from bodyblocks.batch import BatchOptions, iter_jobs, run_batch
from bodyblocks.batch.inputs import MAX_SEGMENT_BYTES, UniqueKeys, safe_key
from bodyblocks.types import Extraction

ARTICLE = ("<html><head><title>Relief</title></head><body><div class='nav'><a href='/'>Home</a></div>"
           "<div class='story'><p>Relief convoys reached the valley on Tuesday after three days of rain, officials "
           "said, and the roads reopened.</p><p>Residents had waited on the ridge for supplies since the bridge "
           "collapsed, and the first trucks carried water and medicine.</p></div></body></html>")


def run(inputs: list[Path], out: Path) -> dict:
    run_batch(inputs, out, BatchOptions(extractor="heuristic", progress=False))
    return json.loads((out / "report.json").read_text(encoding="utf-8"))


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize(("raw", "key"), [
    ("../x", "x"), ("sub/../../x", "sub/x"), ("/abs/path", "abs/path"), ("..\\..\\win", "win"), ("..", "_"),
    ("", "_"), ("a\x00b", "a_b"), ("tab\there", "tab_here"), ("report", "report~page"), ("sub/page", "sub/page"),
    ("中文/页面", "中文/页面"), ("\udcff.page", "\ufffd.page"),
])
def test_safe_keys_stay_inside_the_output_folder(raw: str, key: str, tmp_path: Path) -> None:
    assert safe_key(raw) == key
    assert (tmp_path / (key + ".txt")).resolve().is_relative_to(tmp_path.resolve())


def test_long_keys_are_cut_and_stay_distinct() -> None:
    a, b = safe_key("x" * 300), safe_key("x" * 299 + "y")
    assert a != b and max(len(a.encode()), len(b.encode())) <= MAX_SEGMENT_BYTES
    assert len(safe_key("页" * 200).encode()) <= MAX_SEGMENT_BYTES  # cut on a character boundary


def test_unique_keys_number_the_repeats() -> None:
    unique = UniqueKeys()
    assert [unique(k) for k in ["x", "x", "X", "y", "x"]] == ["x", "x~2", "X~3", "y", "x~4"]


def dataset(folder: Path, records: list[str]) -> Path:
    (folder / "html").mkdir(parents=True)
    (folder / "html" / "good.html.gz").write_bytes(gzip.compress(ARTICLE.encode()))
    (folder / "pages.jsonl").write_text("\n".join(records) + "\n", encoding="utf-8")
    return folder


def test_dataset_ids_and_paths_cannot_escape(tmp_path: Path) -> None:
    secret = tmp_path / "secret.html"
    secret.write_text(ARTICLE.replace("Relief convoys", "SECRET convoys"), encoding="utf-8")
    folder = dataset(tmp_path / "ds", [
        json.dumps({"id": "../escaped", "html": "html/good.html.gz"}),
        json.dumps({"id": "sub/../../deeper", "html": "html/good.html.gz"}),
        json.dumps({"id": "/abs/path", "html": "html/good.html.gz"}),
        json.dumps({"id": "steal", "html": "../secret.html"}),
        json.dumps({"id": "steal-abs", "html": str(secret)}),
        "{not json",
        json.dumps({"html": "html/good.html.gz"}),
        json.dumps({"id": "nohtml"}),
        json.dumps({"id": "n\x00ul" + "x" * 300, "html": "html/good.html.gz"}),
        json.dumps({"id": "good", "html": "html/good.html.gz"}),
    ])
    out = tmp_path / "out"
    report = run([folder], out)
    written = files_under(tmp_path) - files_under(folder) - {secret}
    assert all(p.resolve().is_relative_to(out.resolve()) for p in written)  # nothing written outside --out
    pages = report["pages"]
    assert len(pages) == 10 and report["totals"]["pages"] == 10  # every record accounted for, once
    by_status = {p["id"]: p for p in pages}
    for key in ("escaped", "sub/deeper", "abs/path", "good"):
        assert by_status[key]["status"] == "ok" and (out / f"{key}.txt").exists()
    for key in ("steal", "steal-abs"):
        assert by_status[key]["status"] == "failed" and by_status[key]["error"].startswith("outside-dataset")
    assert not any("SECRET" in p.read_text(encoding="utf-8") for p in out.rglob("*.txt"))  # never read
    failed = [p for p in pages if p["status"] == "failed"]
    assert sorted(p["error"].split(":")[0] for p in failed) == ["bad-record"] * 3 + ["outside-dataset"] * 2
    long = next(p for p in pages if p["id"].startswith("n_ul"))
    assert long["status"] == "ok" and len(long["id"].encode()) <= MAX_SEGMENT_BYTES


def test_colliding_names_get_outputs_of_their_own(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "index.html").write_text(ARTICLE, encoding="utf-8")
    (tmp_path / "b" / "index.html").write_text(ARTICLE.replace("Tuesday", "Monday"), encoding="utf-8")
    (tmp_path / "a" / "x.html").write_text(ARTICLE, encoding="utf-8")
    (tmp_path / "a" / "x.htm").write_text(ARTICLE.replace("Tuesday", "Friday"), encoding="utf-8")
    inputs = [tmp_path / "a" / "index.html", tmp_path / "b" / "index.html", tmp_path / "a"]
    assert [j.key for j in iter_jobs(inputs)] == ["index", "index~2", "index~3", "x", "x~2"]
    out = tmp_path / "out"
    report = run(inputs, out)
    assert report["totals"]["ok"] == 5 and len(list(out.glob("*.txt"))) == 5
    texts = {p.read_text(encoding="utf-8") for p in out.glob("*.txt")}
    assert any("Monday" in t for t in texts) and any("Friday" in t for t in texts)  # none overwrote another
    again = run(inputs, out)  # a rerun names them the same way: every page is found done
    assert again["this_run"]["skipped"] == 5 and again["totals"]["ok"] == 5  # and the report still has them all


@pytest.mark.skipif(os.name != "posix", reason="file names as bytes are a POSIX thing")
def test_a_file_name_that_is_not_utf8_is_extracted_and_reported(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    with open(os.path.join(os.fsencode(src), b"caf\xe9.html"), "w", encoding="utf-8") as fh:
        fh.write(ARTICLE)
    (src / "plain.html").write_text(ARTICLE, encoding="utf-8")
    report = run([src], tmp_path / "out")
    assert report["totals"]["ok"] == 2 and report["totals"]["failed"] == 0
    ids = sorted(p["id"] for p in report["pages"])
    assert ids == ["caf\ufffd", "plain"] and (tmp_path / "out" / "caf\ufffd.txt").exists()


@pytest.mark.skipif(os.name != "posix", reason="FIFOs and symbolic links as POSIX has them")
def test_entries_that_cannot_be_pages_are_reported_not_dropped(tmp_path: Path) -> None:
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    (src / "good.html").write_text(ARTICLE, encoding="utf-8")
    (src / "sub" / "deep.html").write_text(ARTICLE, encoding="utf-8")
    os.symlink(src / "nowhere.html", src / "dangling.html")
    os.mkfifo(src / "pipe.html")  # opening it would block the run for ever
    os.symlink(src, src / "sub" / "loop")  # a folder link back up: not followed
    (tmp_path / "elsewhere.html").write_text(ARTICLE, encoding="utf-8")
    os.symlink(tmp_path / "elsewhere.html", src / "linked.html")  # a file link out of the input: not read
    os.symlink(src / "good.html", src / "sub" / "inside.html")  # a file link inside it: read where it points
    report = run([src], tmp_path / "out")
    by_id = {p["id"]: p for p in report["pages"]}
    assert set(by_id) == {"good", "sub/deep", "sub/inside", "dangling", "pipe", "linked"}  # each once: no loop
    assert by_id["dangling"]["error"] == "not-found: a dangling symbolic link"
    assert by_id["pipe"]["error"] == "not-a-file: a FIFO, not a page file"
    assert by_id["linked"]["error"].startswith("outside-input: a symbolic link to ")
    assert {k for k, p in by_id.items() if p["status"] == "ok"} == {"good", "sub/deep", "sub/inside"}
    assert report["totals"]["failed"] == 3
    assert report["totals"]["reasons"] == {"not-found": 1, "not-a-file": 1, "outside-input": 1}


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads every folder")
def test_a_folder_that_cannot_be_listed_is_a_failed_entry(tmp_path: Path) -> None:
    src = tmp_path / "in"
    (src / "locked").mkdir(parents=True)
    (src / "locked" / "page.html").write_text(ARTICLE, encoding="utf-8")
    (src / "good.html").write_text(ARTICLE, encoding="utf-8")
    (src / "locked").chmod(0)
    try:
        report = run([src], tmp_path / "out")
    finally:
        (src / "locked").chmod(0o755)
    by_id = {p["id"]: p for p in report["pages"]}
    assert by_id["good"]["status"] == "ok" and by_id["locked"]["error"].startswith("unreadable")


class _Deadly:
    """An extractor whose worker dies on a page holding KILL and hangs, out of reach of signals, on HANG."""

    name = "deadly"

    def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
        import signal
        import time

        text = html.decode("utf-8") if isinstance(html, bytes) else html
        if "KILL" in text:
            os.kill(os.getpid(), signal.SIGKILL)
        if "HANG" in text:
            signal.alarm(0)  # as code stuck inside C: the page's own time limit never fires
            time.sleep(3600)
        return Extraction(text="body", extractor=self.name)


def test_a_dead_or_hung_worker_fails_its_page_and_the_run_goes_on(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from bodyblocks.batch import runner
    from bodyblocks.loading import registry

    monkeypatch.setitem(registry.BASELINES, "deadly", _Deadly)
    monkeypatch.setattr(runner, "WORKER_GRACE_S", 1)
    src = tmp_path / "in"
    src.mkdir()
    for i in range(8):
        marker = {2: "KILL", 5: "HANG"}.get(i, "fine")
        (src / f"p{i}.html").write_text(f"<p>{marker} page {i}</p>", encoding="utf-8")
    opts = BatchOptions(extractor="deadly", workers=2, page_timeout=1, progress=False)
    totals = run_batch([src], tmp_path / "out", opts)  # (multiprocessing.Pool waited here for ever)
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    ids = [p["id"] for p in report["pages"]]  # every page, in order but the hung one: the later ones went first
    assert sorted(ids) == [f"p{i}" for i in range(8)] and ids[:5] == [f"p{i}" for i in range(5)]
    by_id = {p["id"]: p for p in report["pages"]}
    assert by_id["p2"]["error"].startswith("worker-died") and by_id["p5"]["error"].startswith("timeout")
    assert (totals.ok, totals.failed) == (6, 2) and totals.reasons == {"worker-died": 1, "timeout": 1}


# ------------------------------------------------------------------------------------------ the record of runs
SLOW_RUN = """
import sys, time
from bodyblocks.loading import registry
from bodyblocks.types import Extraction

class Slow:
    name = "slow"
    def extract(self, html, url=None):
        time.sleep(0.2)
        return Extraction(text="body of the page", extractor="slow")

registry.BASELINES["slow"] = Slow
from bodyblocks.cli import main
sys.exit(main(["extract", sys.argv[1], "--out", sys.argv[2], "--extractor", "slow", "--no-progress"]))
"""


def many_pages(folder: Path, n: int) -> Path:
    folder.mkdir()
    for i in range(n):
        (folder / f"p{i:03d}.html").write_text(f"<p>page {i}</p>", encoding="utf-8")
    return folder


def start_slow_run(src: Path, out: Path) -> Any:
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-c", SLOW_RUN, str(src), str(out)], stderr=subprocess.PIPE, text=True)


def wait_for_lines(out: Path, n: int) -> None:
    import time

    journal = out / "report.pages.jsonl"
    for _ in range(600):
        if journal.exists() and journal.read_text(encoding="utf-8").count('"status"') >= n:
            return
        time.sleep(0.05)
    raise AssertionError("the run wrote no page lines")


def test_kill_9_then_resume_accounts_for_every_page_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import signal

    from bodyblocks.batch import runner
    from bodyblocks.loading import registry

    src, out = many_pages(tmp_path / "in", 300), tmp_path / "out"
    monkeypatch.setattr(runner, "WINDOW", 300)
    proc = start_slow_run(src, out)
    wait_for_lines(out, 1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    class Fast:
        name = "slow"

        def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
            return Extraction(text="body of the page", extractor="slow")

    monkeypatch.setitem(registry.BASELINES, "slow", Fast)
    totals = run_batch([src], out, BatchOptions(extractor="slow", progress=False))
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    ids = [p["id"] for p in report["pages"]]
    assert sorted(ids) == [f"p{i:03d}" for i in range(300)]  # every page, each once
    assert report["status"] == "complete" and report["totals"]["pages"] == 300
    assert 0 < totals.skipped < 300 and totals.ok + totals.skipped == 300  # the killed run's pages kept


def test_sigterm_stops_the_run_with_a_report(tmp_path: Path) -> None:
    import signal

    src, out = many_pages(tmp_path / "in", 200), tmp_path / "out"
    proc = start_slow_run(src, out)
    wait_for_lines(out, 2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM and "Traceback" not in err
    first, *rest = err.strip().splitlines()  # the run's first line: which extractor
    assert first.startswith("bodyblocks extract: slow") and len(rest) == 1 and "interrupted" in rest[0]
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["status"] == "interrupted" and 2 <= report["totals"]["ok"] < 200


def test_a_second_run_into_a_busy_folder_is_refused(tmp_path: Path) -> None:
    from bodyblocks.batch.journal import FolderBusy

    src, out = many_pages(tmp_path / "in", 200), tmp_path / "out"
    proc = start_slow_run(src, out)
    try:
        wait_for_lines(out, 1)
        with pytest.raises(FolderBusy, match="another bodyblocks run"):
            run_batch([src], out, BatchOptions(extractor="heuristic", progress=False))
    finally:
        proc.kill()
        proc.wait()
    assert not (out / "p000.json").exists()


def test_a_resumed_run_must_have_the_folders_settings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bodyblocks.cli import main

    src, out = many_pages(tmp_path / "in", 3), tmp_path / "out"
    base = ["extract", str(src), "--out", str(out), "--no-progress"]
    assert main([*base, "--extractor", "heuristic"]) == 0
    capsys.readouterr()
    assert main([*base, "--extractor", "density"]) == 2  # its outputs would mix with the heuristic's
    err = capsys.readouterr().err
    assert "extractor heuristic" in err and "--no-resume" in err and len(err.strip().splitlines()) == 1
    assert main([*base, "--extractor", "heuristic", "--format", "json"]) == 2
    assert main([*base, "--extractor", "density", "--no-resume"]) == 0  # every page redone
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["extractor"] == "density" and report["this_run"]["ok"] == 3


# ------------------------------------------------------------------------------------------ crafted checkpoints
def test_absurd_model_sizes_are_refused_before_anything_is_allocated(tmp_path: Path) -> None:
    import resource

    import torch

    from bodyblocks.classify.model import BlockClassifier
    from bodyblocks.config import ConfigError, ModelConfig, to_dict

    cfg = ModelConfig(d_model=32, n_heads=2, d_ff=32, n_layers=1, tag_buckets=64, tag_dim=4)
    cfg.encoder.buckets, cfg.encoder.dim = 256, 8
    folder = BlockClassifier(cfg).save(tmp_path / "m")
    meta = json.loads((folder / "config.json").read_text())
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for key, value in (("d_model", 32768), ("tag_buckets", 10**9), ("n_layers", 10**6), ("window", 10**9)):
        bad = json.loads(json.dumps(meta))
        bad["model"][key] = value
        (folder / "config.json").write_text(json.dumps(bad))
        with pytest.raises(ConfigError, match=key.split("_")[0]):
            BlockClassifier.load(folder)
    bad = json.loads(json.dumps(meta))
    bad["model"]["encoder"]["buckets"] = 10**9
    (folder / "config.json").write_text(json.dumps(bad))
    with pytest.raises(ConfigError, match="buckets"):
        BlockClassifier.load(folder)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB: nothing big was made
    assert to_dict(cfg) == meta["model"] and torch.is_tensor(BlockClassifier(cfg).head[0].weight)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -0.5, 1.5, "0.5"])
def test_a_decision_rule_out_of_range_is_refused(value: object) -> None:
    from bodyblocks.extraction.decision import DecisionRule

    with pytest.raises(ValueError, match="decision rule"):
        DecisionRule(value, 0.5)  # type: ignore[arg-type]
    if not isinstance(value, str):  # (a checkpoint's "0.5" is read as the number)
        with pytest.raises(ValueError, match="decision rule"):
            DecisionRule.from_meta({"threshold": 0.5, "rescue": value})


def _shipped_gbt_with(tmp_path: Path, **changes: object) -> Path:
    """A copy of the shipped trees' folder whose config.json has `changes` (skips when none is shipped)."""
    import shutil

    from bodyblocks.loading.checkpoints import shipped

    if shipped("gbt") is None:
        pytest.skip("checkpoints/gbt is not shipped in this checkout")
    folder = tmp_path / "gbt"
    if not folder.exists():
        shutil.copytree(shipped("gbt"), folder)
    meta = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**meta, **changes}))
    return folder


def test_a_checkpoint_with_a_nan_threshold_does_not_load(tmp_path: Path) -> None:
    from bodyblocks.loading.checkpoints import load_extractor

    folder = _shipped_gbt_with(tmp_path, threshold=float("nan"))
    with pytest.raises(ValueError, match="'threshold' must be a number between 0 and 1, not nan"):
        load_extractor("gbt", folder)


def test_a_checkpoint_container_of_three_or_five_numbers_loads_and_four_does_not(tmp_path: Path) -> None:
    from bodyblocks.loading.checkpoints import load_extractor

    folder = _shipped_gbt_with(tmp_path, container=[0.8, 0.3, 0.6, 0.7, 0.3])
    assert load_extractor("gbt", folder).rule.container == (0.8, 0.3, 0.6, 0.7, 0.3)
    _shipped_gbt_with(tmp_path, container=[0.8, 0.3, 0.6, 0.7])
    with pytest.raises(ValueError, match="'container' must be null or three or five numbers"):
        load_extractor("gbt", folder)


def test_encoder_weights_must_be_safetensors(tmp_path: Path) -> None:
    """A hub-style folder with a pickled pytorch_model.bin is refused, whatever torch.load would do."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    from bodyblocks.classify.encoders import HFEncoder

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "[PAD]": 1, "a": 2}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]")
    model = BertModel(BertConfig(vocab_size=3, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                 intermediate_size=8))
    model.save_pretrained(tmp_path / "safe")
    fast.save_pretrained(tmp_path / "safe")
    assert HFEncoder.from_pretrained(tmp_path / "safe", max_length=8, cache_dir=None).encode(["a"]).shape == (1, 8)
    (tmp_path / "pickled").mkdir()
    model.config.save_pretrained(tmp_path / "pickled")
    fast.save_pretrained(tmp_path / "pickled")
    torch.save(model.state_dict(), tmp_path / "pickled" / "pytorch_model.bin")
    with pytest.raises(OSError, match="safetensors"):
        HFEncoder.from_pretrained(tmp_path / "pickled", max_length=8, cache_dir=None)


def test_a_page_cut_at_the_size_limit_says_so(tmp_path: Path) -> None:
    from bodyblocks.loading.checkpoints import shipped
    from bodyblocks.page.segment import MAX_CHARS

    if shipped("gbt") is None:
        pytest.skip("checkpoints/gbt is not shipped in this checkout")
    src = tmp_path / "in"
    src.mkdir()
    paragraph = "<p>" + "Relief convoys reached the valley after three days of rain. " * 20 + "</p>"
    (src / "huge.html").write_text("<html><body>" + paragraph * (MAX_CHARS // len(paragraph) + 50) + "</body></html>",
                                   encoding="utf-8")
    (src / "small.html").write_text(ARTICLE, encoding="utf-8")
    run_batch([src], tmp_path / "out", BatchOptions(extractor="gbt", progress=False))
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    by_id = {p["id"]: p for p in report["pages"]}
    assert by_id["huge"]["truncated"] is True and by_id["small"]["truncated"] is False
    assert report["totals"]["truncated"] == 1


@pytest.mark.browser
@pytest.mark.slow
def test_a_resumed_url_list_captures_only_the_pages_not_done(tmp_path: Path, local_site: Any) -> None:
    import shutil

    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        pytest.skip("needs Debian's chromium and chromium-driver")
    base = local_site(lambda path: (200, ARTICLE.replace("Tuesday", path)))
    urls = tmp_path / "urls.txt"
    urls.write_text("".join(f"{base}/p{i}\n" for i in range(4)), encoding="utf-8")
    opts = BatchOptions(extractor="heuristic", progress=False, capture_opts={"timeout": 20, "retries": 0})
    assert run_batch([urls], tmp_path / "out", opts).ok == 4
    pages = [h for h in local_site.hits if h.startswith("/p")]
    host = base.split("://", 1)[1].replace(":", "_")  # outputs are named from the URL: host_port/path
    (tmp_path / "out" / host / "p2.txt").unlink()
    local_site.hits.clear()
    again = run_batch([urls], tmp_path / "out", opts)
    assert len(pages) == 4 and [h for h in local_site.hits if h.startswith("/p")] == ["/p2"]  # only the missing
    assert (again.ok, again.skipped) == (1, 3) and "/p2" in (tmp_path / "out" / host / "p2.txt").read_text()
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert [p["id"] for p in report["pages"]] == [f"{host}/p{i}" for i in range(4)]


def test_a_page_of_too_many_blocks_fails_alone(tmp_path: Path) -> None:
    from bodyblocks.loading.checkpoints import shipped
    from bodyblocks.page.builder import MAX_BLOCKS

    if shipped("gbt") is None:
        pytest.skip("checkpoints/gbt is not shipped in this checkout")
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.html").write_text(ARTICLE, encoding="utf-8")
    (src / "b-shredded.html").write_text("<html><body>" + "<p>a</p>" * (MAX_BLOCKS + 10) + "</body></html>",
                                         encoding="utf-8")
    (src / "c.html").write_text(ARTICLE, encoding="utf-8")
    totals = run_batch([src], tmp_path / "out", BatchOptions(extractor="gbt", progress=False))
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    by_id = {p["id"]: p for p in report["pages"]}
    assert by_id["b-shredded"]["error"].startswith("too-large: more than 200,000 text blocks")
    assert (totals.ok, totals.failed) == (2, 1)  # its group goes on


def test_a_full_disk_stops_the_run_in_one_line_and_a_rerun_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import errno

    from bodyblocks.batch import journal
    from bodyblocks.cli import main

    src, out = many_pages(tmp_path / "in", 12), tmp_path / "out"
    real = journal.Journal._write
    written: list[int] = []

    def filling(self: Any, rec: dict, flush: bool = False) -> int:
        if "id" in rec:
            written.append(1)
            if len(written) > 5:  # the disk is full after five pages
                try:
                    raise OSError(errno.ENOSPC, "No space left on device")
                except OSError as exc:
                    raise journal.OutputUnwritable(f"cannot write to {out}: {exc.strerror}") from exc
        return real(self, rec, flush)

    monkeypatch.setattr(journal.Journal, "_write", filling)
    args = ["extract", str(src), "--out", str(out), "--extractor", "heuristic", "--no-progress"]
    assert main(args) == 1
    err = capsys.readouterr().err
    first, *rest = err.strip().splitlines()  # the run's first line: which extractor
    assert first.startswith("bodyblocks extract: heuristic") and len(rest) == 1 and "No space left on device" in err
    assert "Traceback" not in err
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]
    monkeypatch.setattr(journal.Journal, "_write", real)  # space freed
    assert main(args) == 0
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert sorted(p["id"] for p in report["pages"]) == [f"p{i:03d}" for i in range(12)]
